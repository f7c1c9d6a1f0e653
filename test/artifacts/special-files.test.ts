import { rm } from 'node:fs/promises';
import t, { type Test } from 'tap';
import { execa } from '#execa';
import { COMMIT_LOG_FILE } from '../../src/storage/commit-log-replay.js';
import { DRIFT_FILE } from '../../src/storage/drift-quarantines.js';
import { runPaths } from '../../src/storage/paths.js';
import { ev, makeTestEnv, startTestBridge, startupFailure, type TestEnv } from '../helpers/bridge.js';
import { runVerify } from '../helpers/cli.js';

/**
 * A read of a FIFO waits for a writer forever. The bridge reads only regular files in its data
 * directory: one in place of a run's file quarantines that run (at startup or when it is next
 * opened) while the others are served, a commit log that is not a regular file stops startup in
 * one line, and `harness verify` says so rather than hanging. Needs `npm run build` (verify).
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

const FILE_NAMES = { snapshot: 'run.json', journal: 'events.jsonl', config: 'run-config.json' } as const;

for (const file of ['snapshot', 'journal', 'config'] as const) {
  t.test(`a FIFO as a run's ${file}: that run is quarantined, the others served`, async (t) => {
    const te = await seeded(t, ['fa', 'fb']);
    await fifo(runPaths(te.dataDir, 'fa')[file]);
    const reason = `${FILE_NAMES[file]}: is not a regular file`;
    const verify = await runVerify(te.env);
    t.equal(verify.code, 1, verify.stdout);
    t.match(verify.stdout, `TAMPERED fa: ${reason}`);
    t.match(verify.stdout, /^ok fb \(/m, 'the other run is still verified');
    const b = await startTestBridge(te);
    t.teardown(() => b.close());
    const got = await b.req('GET', '/runs/fa');
    t.equal(got.body['run']?.status, 'quarantined', JSON.stringify(got.body).slice(0, 300));
    t.match(got.body['run'].quarantine.reasons.join('\n'), reason);
    t.equal((await b.req('POST', '/runs/fb/events', ev())).status, 201, 'the other run is served');
  });
}

for (const file of [COMMIT_LOG_FILE, DRIFT_FILE]) {
  t.test(`a FIFO as ${file}: startup refuses in one line, verify does not hang`, async (t) => {
    const te = await seeded(t, ['fc']);
    await fifo(`${te.dataDir}/${file}`);
    t.match(String(await startupFailure({ env: te.env })), `holds ${file} that is not a regular file`);
    const verify = await runVerify(te.env);
    t.equal(verify.code, 2, verify.stdout);
    t.match(verify.stdout, `UNVERIFIABLE ${file}: not a regular file`);
  });
}

for (const file of ['snapshot', 'journal'] as const) {
  t.test(`a FIFO planted as a run's ${file} while the bridge runs quarantines that run`, async (t) => {
    const te = await seeded(t, ['fd', 'fe']);
    const b = await startTestBridge(te);
    // Not opened yet by this bridge: the next read opens it.
    await fifo(runPaths(te.dataDir, 'fd')[file]);
    const got = await b.req('GET', '/runs/fd');
    t.equal(got.body['run']?.status, 'quarantined', JSON.stringify(got.body).slice(0, 300));
    t.match(got.body['run'].quarantine.reasons.join('\n'), `${FILE_NAMES[file]}: is not a regular file`);
    t.equal((await b.req('POST', '/runs/fe/events', ev())).status, 201, 'the other run is served');
    // A read hung on the FIFO would hold the shutdown too (the file's timeout would fail it).
    await b.close();
  });
}
