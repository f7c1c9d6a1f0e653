import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { RUN_DIRECTORY_MAX } from '../../src/contract/index.js';
import { startBridge } from '../../src/server/start.js';
import { scanLayout } from '../../src/storage/layout.js';
import { StartupError } from '../../src/storage/lease.js';
import { IndexFile, RUN_INDEX_FILE, readIndexFile } from '../../src/storage/run-index-file.js';
import { StartupReader } from '../../src/storage/startup-read.js';
import { ev, makeTestEnv, startTestBridge, type TestEnv } from '../helpers/bridge.js';

/**
 * The startup reader (storage/startup-read.ts): a large data directory's run index and layout
 * scan read on a thread of its own give what the main thread's read gives, an index file that
 * changed after its early read is read again, and a start that fails ends the thread.
 */

async function withRuns(ids: string[]): Promise<TestEnv> {
  const te = await makeTestEnv();
  const b = await startTestBridge(te);
  for (const id of ids)
    t.equal((await b.req('POST', `/runs/${id}/events`, ev({ id: `${id}-0` }))).status, 201);
  await b.close();
  return te;
}

const inputOf = (te: TestEnv) => ({
  dataDir: te.dataDir,
  key: Buffer.from(te.env['HARNESS_BRIDGE_INTEGRITY_KEY']!),
  trustPin: te.env['HARNESS_REVIEW_TRUST_SHA256']!,
  maxRuns: RUN_DIRECTORY_MAX,
});

const entries = (read: Awaited<ReturnType<typeof readIndexFile>>) =>
  read.kind === 'read' ? [...read.runs.values()].sort((a, b) => (a.runId < b.runId ? -1 : 1)) : read.kind;

t.test("the reader's thread reads the index and scans the layout as the main thread does", async (t) => {
  const te = await withRuns(['b', 'a', 'c']);
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  const input = inputOf(te);
  const mainRead = await readIndexFile(join(te.dataDir, RUN_INDEX_FILE), input.key, input.trustPin);
  const mainFound = await scanLayout(
    te.dataDir,
    input.key,
    input.trustPin,
    RUN_DIRECTORY_MAX,
    mainRead.kind === 'read' ? mainRead.dirs : undefined,
  );
  const reader = await StartupReader.forDataDir(te.dataDir, 0);
  t.ok(reader, 'a reader for any index size from 0 bytes');
  reader!.prepare(input);
  const { read, found } = await reader!.read();
  await reader!.cancel();
  t.equal(read.kind, 'read');
  t.same(entries(read), entries(mainRead), 'every entry, as the main thread reads it');
  t.same(found, mainFound, 'the same layout findings');
  t.equal(read.kind === 'read' && read.runs.slotOf('a') !== undefined, true, 'the table answers lookups');
});

t.test('an index file replaced after the early read is read again under the lease', async (t) => {
  const te = await withRuns(['a', 'b', 'c']);
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  const input = inputOf(te);
  const path = join(te.dataDir, RUN_INDEX_FILE);
  const before = await readIndexFile(path, input.key, input.trustPin);
  const reader = await StartupReader.forDataDir(te.dataDir, 0);
  reader!.prepare(input);
  // Long enough for the early read of a three-run index, on any machine the suite runs on.
  await sleep(1500);
  // As the bridge that held the lease before would have left it: rewritten without run b.
  const file = await IndexFile.open(path, input.key, input.trustPin, before);
  await file.rewrite(before.kind === 'read' ? [...before.runs.values()].filter((e) => e.runId !== 'b') : []);
  await file.close();
  const { read } = await reader!.read();
  await reader!.cancel();
  t.same(
    entries(read),
    entries(await readIndexFile(path, input.key, input.trustPin)),
    'the file as it is now, not as it was read early',
  );
  t.equal(read.kind === 'read' && read.runs.has('b'), false);
});

t.test(
  "a refusal found on the reader's thread stops the start as one found on the main thread",
  async (t) => {
    const te = await withRuns(['a']);
    t.teardown(() => rm(te.dir, { recursive: true, force: true }));
    await writeFile(join(te.dataDir, 'old-run.jsonl'), '{}\n');
    const refusal = await startBridge({ env: te.env, storage: { readerMinBytes: 0 } }).catch(
      (err: Error) => err,
    );
    t.type(refusal, StartupError, 'a StartupError, so `harness bridge` exits 2');
    t.match((refusal as Error).message, /legacy pre-v0\.8 layout \(old-run\.jsonl\)/);
  },
);

t.test("a start that fails ends the reader's thread", async (t) => {
  const te = await withRuns(['a']);
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  const reader = await StartupReader.forDataDir(te.dataDir, 0);
  const failed = await startBridge({
    env: { ...te.env, HARNESS_BRIDGE_PORT: 'not a port' },
    reader,
  }).catch((err: Error) => err);
  t.type(failed, StartupError);
  const after = await reader!.read().catch((err: Error) => err);
  t.match((after as Error).message, /the startup reader ended/, 'its thread was ended, not left waiting');
});

t.test('a bridge started on the reader serves the runs it read', async (t) => {
  const te = await withRuns(['b', 'a']);
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  const b = await startTestBridge(te, { storage: { readerMinBytes: 0 } });
  t.teardown(async () => {
    await b.close();
    await rm(te.dir, { recursive: true, force: true });
  });
  const page = await b.req('GET', '/runs?limit=50');
  t.same(
    page.body.runs.map((r: { id: string }) => r.id),
    ['b', 'a'],
    'in creation order',
  );
  t.equal((await b.req('POST', '/runs/a/events', ev({ id: 'a-1' }))).status, 201, 'and writes to them');
});
