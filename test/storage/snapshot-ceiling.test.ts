import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { runPaths } from '../../src/storage/paths.js';
import { readSealed, SealCeilingError, SealError, writeSealed } from '../../src/storage/sealed-file.js';
import { cleanup, ev, makeTestEnv, startTestBridge, type TestEnv } from '../helpers/bridge.js';

/**
 * CONTRACT 7: run.json is an optimization the journal outranks, read back under a ceiling. The
 * state keeps every approval ever requested, so a long run outgrows any fixed ceiling: such a
 * snapshot is skipped rather than written, the run.json on disk (if any) still binds an earlier
 * journal prefix, and the run reopens by replaying the journal, never quarantined by its own size.
 * The ceiling is made small here; the default is SNAPSHOT_MAX_BYTES.
 */
const snapshotMaxBytes = 8 * 1024;
const storage = { snapshotMaxBytes };

const approvalRequest = (i: number) =>
  ev({
    id: `a${i}`,
    type: 'approval.requested',
    nodeId: 'redzone',
    status: 'needs_approval',
    approvalOwner: 'ops',
    approvalScope: `scope-${i}-${'x'.repeat(1000)}`,
  });

async function postApprovals(t: Test, te: TestEnv, from: number, to: number): Promise<void> {
  const b = await startTestBridge(te, { storage });
  for (let i = from; i < to; i++)
    t.equal((await b.req('POST', '/runs/r/events', approvalRequest(i))).status, 201);
  await b.close(); // evicting the open run writes (or skips) run.json
}

async function reopened(t: Test, te: TestEnv, events: number) {
  const b = await startTestBridge(te, { storage });
  t.teardown(() => cleanup(b));
  const got = await b.req('GET', '/runs/r?eventLimit=1');
  t.equal(got.status, 200);
  t.equal(got.body['run'].status, 'running', 'not quarantined by its own snapshot');
  t.equal(got.body['run'].eventCount, events);
  t.equal(got.body['run'].pendingApprovals, events, 'the state replayed from the journal');
}

t.test('an oversize snapshot keeps the earlier run.json and the run reopens', async (t) => {
  const te = await makeTestEnv();
  await postApprovals(t, te, 0, 2);
  const snapshot = runPaths(te.dataDir, 'r').snapshot;
  const small = await readFile(snapshot);
  t.ok(small.length <= snapshotMaxBytes, 'a small state is snapshotted');
  await postApprovals(t, te, 2, 12);
  t.ok((await readFile(snapshot)).equals(small), 'the oversize snapshot was not written');
  await reopened(t, te, 12);
});

t.test('a run whose first snapshot is oversize is rebuilt from the journal', async (t) => {
  const te = await makeTestEnv();
  await postApprovals(t, te, 0, 12);
  const snapshot = runPaths(te.dataDir, 'r').snapshot;
  await t.rejects(stat(snapshot), { code: 'ENOENT' }, 'no run.json over the ceiling');
  await reopened(t, te, 12);
});

t.test('a sealed file of exactly its ceiling is written and read back', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'harness-sealed-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const key = randomBytes(32);
  const path = join(dir, 'run.json');
  const body = { schema: 'harness.snapshot.v2', note: 'x'.repeat(500) };
  await writeSealed(path, key, 'harness.snapshot.v2', body, Number.POSITIVE_INFINITY);
  const exact = (await stat(path)).size;
  // What the writer allows the reader accepts: a file at the ceiling never quarantines its run.
  await writeSealed(path, key, 'harness.snapshot.v2', body, exact);
  t.same(await readSealed(path, key, 'harness.snapshot.v2', exact), body);
  const over = await writeSealed(path, key, 'harness.snapshot.v2', body, exact - 1).catch((e) => e);
  t.ok(over instanceof SealCeilingError, 'one byte less: not written');
  const under = await readSealed(path, key, 'harness.snapshot.v2', exact - 1).catch((e) => e);
  t.ok(under instanceof SealError, 'nor read back');
});
