import { execFileSync } from 'node:child_process';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { execa } from '#execa';
import { COMMIT_LOG_FILE } from '../../src/storage/commit-log-replay.js';
import { runPaths } from '../../src/storage/paths.js';
import { cleanup, ev, startTestBridge, type TestEnv } from '../helpers/bridge.js';
import { crashImage } from '../helpers/crash-image.js';
import { recordHandleSyncs } from '../helpers/patch-fs.js';
import { CLI } from '../helpers/paths.js';
import { dropRunIndex } from '../helpers/run-index.js';

/**
 * CONTRACT 7, at startup: commit.log holds acknowledged records whose journal lines may still be
 * only in the page cache (a kill -9 keeps the page cache; a power loss later does not). Startup
 * empties the log, so every journal it names must be on disk first, whether or not a record was
 * missing from it. And one run's damaged journal disputes that run only: startup serves the rest.
 */

async function seeded(t: Test, runs: string[]): Promise<TestEnv> {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  for (const runId of runs)
    for (let i = 0; i < 3; i++) t.equal((await b.req('POST', `/runs/${runId}/events`, ev())).status, 201);
  const crashed = await crashImage(t, b);
  const log = await readFile(join(crashed.dataDir, COMMIT_LOG_FILE), 'utf8');
  t.equal(log.split('\n').filter(Boolean).length, 3 * runs.length, 'the log holds every record');
  return crashed;
}

t.test('startup syncs every journal the log names before it empties the log', async (t) => {
  const crashed = await seeded(t, ['a', 'b']);
  const seen = await recordHandleSyncs(t);
  const b = await startTestBridge(crashed);
  t.teardown(() => b.close());
  const logPath = join(crashed.dataDir, COMMIT_LOG_FILE);
  const emptied = seen.indexOf(`truncate ${logPath}`);
  t.ok(emptied >= 0, 'startup empties the log');
  for (const runId of ['a', 'b']) {
    const synced = seen.indexOf(`datasync ${runPaths(crashed.dataDir, runId).journal}`);
    t.ok(synced >= 0 && synced < emptied, `run ${runId}'s journal is synced before the log is emptied`);
  }
  t.equal((await stat(logPath)).size, 0);
  for (const runId of ['a', 'b']) t.equal((await b.req('GET', `/runs/${runId}`)).body.run.eventCount, 3);
});

for (const [what, damage] of [
  ['a directory', (path: string) => mkdir(path)],
  ['a FIFO', async (path: string) => execFileSync('mkfifo', [path])],
] as const) {
  t.test(`a journal replaced by ${what} disputes its run only; startup serves the others`, async (t) => {
    const crashed = await seeded(t, ['good', 'victim']);
    const journal = runPaths(crashed.dataDir, 'victim').journal;
    await rm(journal);
    await damage(journal);
    const b = await startTestBridge(crashed);
    t.teardown(() => b.close());
    const good = await b.req('GET', '/runs/good');
    t.equal(good.status, 200);
    t.equal(good.body.run.eventCount, 3, 'the other run is replayed and served');
    const victim = await b.req('GET', '/runs/victim');
    t.equal(victim.body.run.status, 'quarantined');
    t.match(victim.body.run.quarantine.reasons, [
      'commit.log cannot be replayed: the journal is not a regular file',
    ]);
    const dir = runPaths(crashed.dataDir, 'victim').dir;
    const entries = await readdir(dir);
    const refused = await b.req('POST', '/runs/victim/events', ev());
    t.equal(refused.status, 409);
    t.equal(refused.body.error, 'run_quarantined');
    t.same(await readdir(dir), entries, 'no file is added to the run');
    const kind = await stat(journal);
    t.ok(what === 'a directory' ? kind.isDirectory() : kind.isFIFO(), `the journal is still ${what}`);
  });
}

t.test(
  'after a crash, a run whose config is damaged is quarantined under the ID the log names',
  async (t) => {
    // No snapshot yet (written lazily) and another run's config in its place: only commit.log
    // still says which run the directory holds. Its reads must give the quarantine and its reason,
    // not 404.
    const crashed = await seeded(t, ['good', 'm-a']);
    const paths = runPaths(crashed.dataDir, 'm-a');
    await rm(paths.snapshot, { force: true });
    await writeFile(paths.config, await readFile(runPaths(crashed.dataDir, 'good').config));
    await dropRunIndex(crashed.dataDir);
    // harness verify names it as startup will.
    const verify = await execa(process.execPath, [CLI, 'verify'], {
      env: { PATH: process.env['PATH'] ?? '', ...crashed.env },
      extendEnv: false,
      reject: false,
    });
    t.match(verify.stdout, /^TAMPERED m-a: run-config\.json belongs to another run$/m, verify.stdout);
    const b = await startTestBridge(crashed);
    t.teardown(() => b.close());
    const read = await b.req('GET', '/runs/m-a');
    t.equal(read.status, 200, JSON.stringify(read.body));
    t.equal(read.body.run.status, 'quarantined');
    t.match(read.body.run.quarantine.reasons, [
      /^run-config\.json: run-config\.json belongs to another run$/,
    ]);
    t.equal((await b.req('GET', '/runs/good')).body.run.eventCount, 3, 'the other run is served');
  },
);
