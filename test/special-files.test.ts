import { rm } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import t, { type Test } from 'tap';
import { execa } from '#execa';
import { COMMIT_LOG_FILE } from '../src/storage/commit-log-replay.js';
import { runDirName, runPaths } from '../src/storage/paths.js';
import { ev, makeTestEnv, startTestBridge, startupFailure, type TestEnv } from './helpers/bridge.js';
import { runVerify } from './helpers/cli.js';

/**
 * A read of a FIFO waits for a writer forever. The bridge reads only regular files in its data
 * directory: a special file found at startup stops it in one line (like a link), one planted
 * while it runs quarantines that run instead of hanging its reads and its shutdown, and `harness
 * verify` reports it UNVERIFIABLE rather than hanging. Needs `npm run build` (verify).
 */
const fifo = async (path: string) => {
  await rm(path, { force: true });
  await execa('mkfifo', [path]);
};

async function seeded(t: Test, runs: string[]): Promise<TestEnv> {
  const te = await makeTestEnv();
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  const b = await startTestBridge(te);
  for (const runId of runs) t.equal((await b.req('POST', `/runs/${runId}/events`, ev())).status, 201);
  await b.close();
  return te;
}

for (const file of ['snapshot', 'journal', 'config'] as const) {
  t.test(`a FIFO as a run's ${file}: startup refuses in one line, verify does not hang`, async (t) => {
    const te = await seeded(t, ['fa', 'fb']);
    const path = runPaths(te.dataDir, 'fa')[file];
    await fifo(path);
    const err = String(await startupFailure({ env: te.env }));
    t.match(
      err,
      `holds special files (${basename(dirname(path))}/${basename(path)}), FIFOs, sockets or devices`,
    );
    const verify = await runVerify(te.env);
    t.equal(verify.code, 2, verify.stdout);
    t.match(verify.stdout, `UNVERIFIABLE ${runDirName('fa')}: special files in the run directory`);
    t.match(verify.stdout, /^ok fb \(/m, 'the other run is still verified');
  });
}

t.test('a FIFO as commit.log: startup refuses in one line, verify does not hang', async (t) => {
  const te = await seeded(t, ['fc']);
  await fifo(`${te.dataDir}/${COMMIT_LOG_FILE}`);
  t.match(String(await startupFailure({ env: te.env })), `holds special files (${COMMIT_LOG_FILE})`);
  const verify = await runVerify(te.env);
  t.equal(verify.code, 2, verify.stdout);
});

for (const file of ['snapshot', 'journal'] as const) {
  t.test(`a FIFO planted as a run's ${file} while the bridge runs quarantines that run`, async (t) => {
    const te = await seeded(t, ['fd', 'fe']);
    const b = await startTestBridge(te);
    // Not opened yet by this bridge: the next read opens it.
    await fifo(runPaths(te.dataDir, 'fd')[file]);
    const got = await b.req('GET', '/runs/fd');
    t.equal(got.body['run']?.status, 'quarantined', JSON.stringify(got.body).slice(0, 300));
    t.match(got.body['run'].quarantine.reasons.join('\n'), 'is not a regular file');
    t.equal((await b.req('POST', '/runs/fe/events', ev())).status, 201, 'the other run is served');
    await b.close();
    t.pass('the bridge closed');
  });
}
