import { cp, mkdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { startBridge } from '../../src/server/start.js';
import { StartupError } from '../../src/storage/lease.js';
import { runDirName } from '../../src/storage/paths.js';
import { ev, makeTestEnv, startTestBridge, startupFailure, type TestEnv } from '../helpers/bridge.js';
import { dropRunIndex } from '../helpers/run-index.js';

/**
 * SPEC Versioning 2 and Errors 7, CONTRACT 7: pre-v0.8 state (a `<RUN_ID>/run.json` directory or
 * raw JSONL events) stops startup, and so does any symbolic link in the data directory or in a
 * run directory: the bridge creates none and must never follow one. The bridge's own files
 * (`commit.log`, `commit-disputed.jsonl`, the lease) never do.
 */
const te: TestEnv = await makeTestEnv();
t.teardown(() => rm(te.dir, { recursive: true, force: true }));

let n = 0;
async function freshDir(): Promise<string> {
  const dir = join(te.dir, `data-${n++}`);
  await mkdir(dir, { recursive: true });
  return dir;
}

async function refuses(t: Test, dataDir: string, names: string[]): Promise<void> {
  const err = await startupFailure({ env: { ...te.env, HARNESS_DATA_DIR: dataDir } });
  t.ok(err instanceof StartupError, `refused with a StartupError (${String(err)})`);
  const message = err instanceof Error ? err.message : '';
  for (const name of ['HARNESS_DATA_DIR', ...names])
    t.ok(message.includes(name), `names ${name}: ${message}`);
  t.notOk(message.includes('\n'), 'one line');
}

/** A data directory holding one real run (config, journal with one event), made by a bridge. */
async function dirWithRun(runId: string): Promise<string> {
  const dataDir = await freshDir();
  const b = await startTestBridge({ ...te, dataDir, env: { ...te.env, HARNESS_DATA_DIR: dataDir } });
  t.equal((await b.req('POST', `/runs/${runId}/events`, ev({ id: 'e-0' }))).status, 201);
  await b.close();
  return dataDir;
}

t.test('a <RUN_ID> symlink to a directory holding run.json', async (t) => {
  const dataDir = await freshDir();
  const outside = join(te.dir, 'outside-legacy');
  await mkdir(outside, { recursive: true });
  await writeFile(join(outside, 'run.json'), '{"id":"my-old-run"}');
  await symlink(outside, join(dataDir, 'my-old-run'));
  await refuses(t, dataDir, ['my-old-run', 'symbolic link']);
});

t.test('a run directory that is a symlink to a real run directory', async (t) => {
  const dataDir = await dirWithRun('linked-run');
  const name = runDirName('linked-run');
  const moved = join(te.dir, 'moved-run');
  await rename(join(dataDir, name), moved);
  await symlink(moved, join(dataDir, name));
  await refuses(t, dataDir, [name]);
});

t.test('a symlink inside a run directory (its journal linked elsewhere)', async (t) => {
  const dataDir = await dirWithRun('linked-journal');
  const journal = join(dataDir, runDirName('linked-journal'), 'events.jsonl');
  const elsewhere = join(te.dir, 'elsewhere.jsonl');
  await cp(journal, elsewhere);
  await rm(journal);
  await symlink(elsewhere, journal);
  const before = await readFile(elsewhere);
  await dropRunIndex(dataDir);
  await refuses(t, dataDir, [`${runDirName('linked-journal')}/events.jsonl`]);
  t.ok((await readFile(elsewhere)).equals(before), 'nothing was written through the link');
});

t.test('a symlinked commit.log, and a dangling link', async (t) => {
  const dataDir = await dirWithRun('linked-log');
  await writeFile(join(te.dir, 'log-target'), '');
  await rm(join(dataDir, 'commit.log'), { force: true });
  await symlink(join(te.dir, 'log-target'), join(dataDir, 'commit.log'));
  await symlink(join(te.dir, 'does-not-exist'), join(dataDir, 'dangling'));
  await refuses(t, dataDir, ['commit.log', 'dangling']);
  t.equal(await readFile(join(te.dir, 'log-target'), 'utf8'), '', 'nothing was written through the link');
});

t.test('raw JSONL events at the top of the data directory, or in a directory', async (t) => {
  const top = await freshDir();
  await writeFile(join(top, 'old-run.jsonl'), '{"type":"node.entered"}\n');
  await refuses(t, top, ['old-run.jsonl']);
  const nested = await freshDir();
  await mkdir(join(nested, 'old'));
  await writeFile(join(nested, 'old', 'session-1.jsonl'), '{"type":"node.entered"}\n');
  await refuses(t, nested, ['old']);
  const loose = await freshDir();
  await writeFile(join(loose, 'run.json'), '{"id":"x"}');
  await refuses(t, loose, ['run.json']);
});

t.test("the bridge's own files and unrelated entries never stop startup", async (t) => {
  const dataDir = await dirWithRun('own-files');
  await writeFile(join(dataDir, 'commit-disputed.jsonl'), '');
  await writeFile(join(dataDir, '.bridge.lease.0123456789ab.tmp'), '');
  await writeFile(join(dataDir, 'notes.txt'), 'operator notes');
  await mkdir(join(dataDir, 'lost+found'));
  const b = await startBridge({ env: { ...te.env, HARNESS_DATA_DIR: dataDir } });
  t.pass('started');
  await b.close();
});
