import { randomUUID } from 'node:crypto';
import { rm, stat } from 'node:fs/promises';
import t from 'tap';
import {
  APPROVAL_RECORD_BYTES,
  APPROVAL_TEXT_MAX_BYTES,
  type StoredEvent,
  TEXT_FIELD_MAX,
} from '../../src/contract/index.js';
import { runPaths } from '../../src/storage/paths.js';
import { cleanup, ev, makeTestEnv, startTestBridge, type TestBridge } from '../helpers/bridge.js';
import { expectRejected } from '../helpers/expect.js';
import { fileStoreOnly } from '../helpers/pg-store.js';

/**
 * An open run keeps every approval's owner and scope in memory (the state and the pending index),
 * so a run may hold at most APPROVAL_TEXT_MAX_BYTES of them (plus APPROVAL_RECORD_BYTES per
 * approval): a request past it is refused with 409 run_history_full and nothing is stored. A
 * journal that already holds more (written before the ceiling) still opens, from the journal and
 * from a snapshot: replay never refuses.
 */
const filler = (i: number) => `${i}`.padStart(TEXT_FIELD_MAX, 'o');
const request = (i: number, over: Record<string, unknown> = {}) =>
  ev({
    type: 'approval.requested',
    nodeId: 'redzone',
    status: 'needs_approval',
    approvalOwner: filler(i),
    approvalScope: filler(i),
    ...over,
  });
/** Each request at the field maximum counts this much against the ceiling. */
const LARGEST = 2 * TEXT_FIELD_MAX + APPROVAL_RECORD_BYTES;
const FIT = Math.floor(APPROVAL_TEXT_MAX_BYTES / LARGEST);

async function fill(b: TestBridge, runId: string, from: number, count: number): Promise<void> {
  for (let i = from; i < from + count; i += 20) {
    const batch = Array.from({ length: Math.min(20, from + count - i) }, (_, j) => request(i + j));
    const rs = await Promise.all(batch.map((body) => b.req('POST', `/runs/${runId}/events`, body)));
    for (const r of rs) if (r.status !== 201) throw new Error(`${r.status} ${JSON.stringify(r.body)}`);
  }
}

t.test('an approval past the ceiling: 409 run_history_full, nothing stored', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const human = b.t.env['HARNESS_HUMAN_APPROVAL_TOKEN']!;
  await fill(b, 'full', 0, FIT);
  const r = await expectRejected(
    t,
    b,
    'full',
    () => b.req('POST', '/runs/full/events', request(FIT)),
    409,
    'run_history_full',
  );
  t.match(r.body.message, /approvals are at their ceiling \(1048576 bytes/);
  // What is left below the ceiling still takes a short request; the ceiling counts bytes.
  const left = APPROVAL_TEXT_MAX_BYTES - FIT * LARGEST;
  t.ok(left >= APPROVAL_RECORD_BYTES + 2, `${left} bytes are left`);
  const short = request(0, { approvalOwner: 'o', approvalScope: 's' });
  t.equal((await b.req('POST', '/runs/full/events', short)).status, 201);
  // Everything else goes on: other events, and decisions (which add no text).
  t.equal((await b.req('POST', '/runs/full/events', ev())).status, 201);
  const grant = ev({
    type: 'approval.granted',
    actor: 'human',
    nodeId: 'redzone',
    approvalOwner: 'o',
    approvalScope: 's',
  });
  t.equal((await b.req('POST', '/runs/full/events', grant, { 'x-harness-human-token': human })).status, 201);
  // A request that reaches the ceiling exactly is taken; a decided approval still counts (the state
  // keeps it), so after that not even the smallest request fits.
  const rest = left - (2 + APPROVAL_RECORD_BYTES) - (1 + APPROVAL_RECORD_BYTES);
  const exact = request(0, { approvalOwner: 'e', approvalScope: 'x'.repeat(rest) });
  t.equal((await b.req('POST', '/runs/full/events', exact)).status, 201, 'up to the ceiling exactly');
  await expectRejected(
    t,
    b,
    'full',
    () => b.req('POST', '/runs/full/events', request(0, { approvalOwner: 'z', approvalScope: 'z' })),
    409,
    'run_history_full',
  );
  const view = await b.req('GET', '/runs/full?eventLimit=1');
  t.equal(view.body.run.pendingApprovals, FIT + 1);
  t.equal((await b.req('POST', '/runs/full-2/events', request(0))).status, 201, 'a new run ID takes it');
  t.equal((await b.req('GET', '/health')).body.limits.approvalTextMaxBytes, APPROVAL_TEXT_MAX_BYTES);
});

t.test(
  'a journal holding more than the ceiling still opens, from the journal and a snapshot',
  fileStoreOnly('run.json snapshots'),
  async (t) => {
    const te = await makeTestEnv();
    let open: TestBridge | null = await startTestBridge(te);
    t.teardown(async () => {
      await open?.close();
      await rm(te.dir, { recursive: true, force: true });
    });
    const b = open;
    t.equal((await b.req('POST', '/runs/old/events', ev({ type: 'run.created' }))).status, 201);
    // Records as a bridge without the ceiling wrote them: appended past the API's rules.
    const loaded = await b.ctx.store.load('old');
    if (loaded.kind !== 'open') throw new Error('not open');
    const over = FIT + 10;
    let durable: Promise<void> = Promise.resolve();
    for (let i = 0; i < over; i++) {
      const event = { ...request(i), id: randomUUID(), ts: new Date().toISOString() } as StoredEvent;
      durable = b.ctx.store.append(loaded.run, event, null).durable;
    }
    await durable;
    b.ctx.store.release(loaded.run);
    await b.close();
    open = null;
    // No snapshot: the whole journal is replayed.
    await rm(runPaths(te.dataDir, 'old').snapshot, { force: true });

    const snapshot = runPaths(te.dataDir, 'old').snapshot;
    for (const from of ['the journal', 'a snapshot']) {
      const exists = await stat(snapshot).then(
        () => true,
        () => false,
      );
      t.equal(exists, from === 'a snapshot', `run.json ${exists ? 'is' : 'is not'} there`);
      const b2 = await startTestBridge(te);
      open = b2;
      const view = await b2.req('GET', '/runs/old?eventLimit=1');
      t.equal(view.status, 200, `opened from ${from}`);
      t.equal(view.body.run.pendingApprovals, over, `every approval replayed from ${from}`);
      await expectRejected(
        t,
        b2,
        'old',
        () => b2.req('POST', '/runs/old/events', request(over)),
        409,
        'run_history_full',
      );
      await b2.close(); // writes run.json: the second round opens from it
      open = null;
    }
  },
);
