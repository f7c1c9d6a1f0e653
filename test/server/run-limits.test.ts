import t from 'tap';
import { JOURNAL_RECORD_MAX_BYTES } from '../../src/contract/index.js';
import { RunQueue } from '../../src/server/run-queue.js';
import { cleanup, ev, makeTestEnv, startTestBridge } from '../helpers/bridge.js';
import { expectRejected } from '../helpers/expect.js';

/**
 * CONTRACT 2, 3 and 7, SPEC Limits: a run holds at most HARNESS_MAX_EVENTS_PER_RUN events and a
 * journal of at most JOURNAL_MAX_BYTES (409 run_history_full, continue under a new run ID), and a full queue answers 503 bridge_busy with
 * retry-after instead of growing without limit. Neither stores anything.
 */
t.test('HARNESS_MAX_EVENTS_PER_RUN: 409 run_history_full', async (t) => {
  const te = await makeTestEnv();
  te.env['HARNESS_MAX_EVENTS_PER_RUN'] = '3';
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  for (let i = 0; i < 3; i++)
    t.equal((await b.req('POST', '/runs/full/events', ev({ id: `f${i}` }))).status, 201);
  await expectRejected(t, b, 'full', () => b.req('POST', '/runs/full/events', ev()), 409, 'run_history_full');
  // A repeat of a stored id is still answered as a duplicate; a new run ID takes new events.
  t.equal((await b.req('POST', '/runs/full/events', ev({ id: 'f0' }))).status, 200);
  t.equal((await b.req('POST', '/runs/full-2/events', ev())).status, 201);
  // A refused completion cannot push a run.blocked record past the ceiling either.
  await expectRejected(
    t,
    b,
    'full',
    () => b.req('POST', '/runs/full/events', ev({ type: 'run.completed', nodeId: 'handoff' })),
    409,
    'run_history_full',
  );
});

t.test('a journal exactly one largest record below its ceiling still takes an event', async (t) => {
  // The size of one record of this run, as a bridge without a tight ceiling writes it.
  const probe = await startTestBridge();
  t.equal((await probe.req('POST', '/runs/edge/events', ev({ id: 'e0' }))).status, 201);
  const one = (await probe.journal('edge')).length;
  await cleanup(probe);
  // Past one such record the journal is exactly at the room kept free for the largest record.
  const b = await startTestBridge(undefined, {
    storage: { journalMaxBytes: JOURNAL_RECORD_MAX_BYTES + one },
  });
  t.teardown(() => cleanup(b));
  t.equal((await b.req('POST', '/runs/edge/events', ev({ id: 'e0' }))).status, 201);
  t.equal((await b.journal('edge')).length, one, 'the journal is at the room kept free, not past it');
  t.equal((await b.req('POST', '/runs/edge/events', ev({ id: 'e1' }))).status, 201, 'not full yet');
  await expectRejected(t, b, 'edge', () => b.req('POST', '/runs/edge/events', ev()), 409, 'run_history_full');
});

t.test('the journal byte ceiling: 409 run_history_full, also after a restart', async (t) => {
  const te = await makeTestEnv();
  // Room for a few ordinary records below the ceiling, once one record of the largest size is
  // kept free: the check refuses before any work, so nothing is ever cut short.
  const journalMaxBytes = JOURNAL_RECORD_MAX_BYTES + 1500;
  const storage = { journalMaxBytes };
  const b = await startTestBridge(te, { storage });
  let accepted = 0;
  while (
    accepted < 20 &&
    (await b.req('POST', '/runs/bytes/events', ev({ id: `b${accepted}` }))).status === 201
  )
    accepted++;
  t.ok(accepted > 1 && accepted < 10, `a few events fit (${accepted})`);
  const size = (await b.journal('bytes')).length;
  t.ok(size <= journalMaxBytes, 'the journal stays under its ceiling');
  await expectRejected(
    t,
    b,
    'bytes',
    () => b.req('POST', '/runs/bytes/events', ev()),
    409,
    'run_history_full',
  );
  await expectRejected(
    t,
    b,
    'bytes',
    () => b.req('POST', '/runs/bytes/events', ev({ type: 'run.completed', nodeId: 'handoff' })),
    409,
    'run_history_full',
  );
  t.equal(
    (await b.req('POST', '/runs/bytes/events', ev({ id: 'b0' }))).status,
    200,
    'a repeat is a duplicate',
  );
  t.equal((await b.req('POST', '/runs/bytes-2/events', ev())).status, 201, 'a new run ID takes events');
  await b.close();

  // Reopened from disk, the run is still full and still readable.
  const b2 = await startTestBridge(te, { storage });
  t.teardown(() => cleanup(b2));
  const got = await b2.req('GET', '/runs/bytes');
  t.equal(got.body['run']?.eventCount, accepted, 'every accepted event is there');
  await expectRejected(
    t,
    b2,
    'bytes',
    () => b2.req('POST', '/runs/bytes/events', ev()),
    409,
    'run_history_full',
  );
});

t.test('a full queue: 503 bridge_busy with retry-after, nothing stored', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  t.equal((await b.req('POST', '/runs/busy/events', ev())).status, 201);
  // A queue of one slot per run, held by an operation the test controls.
  b.ctx.queue = new RunQueue(1, 100);
  let release!: () => void;
  const held = b.ctx.queue.run('busy', () => new Promise<void>((r) => (release = r)));
  const r = await expectRejected(
    t,
    b,
    'busy',
    () => b.req('POST', '/runs/busy/events', ev()),
    503,
    'bridge_busy',
  );
  t.equal((r.headers as Headers).get('retry-after'), '1');
  const read = await b.req('GET', '/runs/busy');
  t.equal(read.status, 503, 'reads wait in the same bounded queue');
  t.equal(read.body['error'], 'bridge_busy');
  // Other runs are not held up.
  t.equal((await b.req('POST', '/runs/other/events', ev())).status, 201);
  release();
  await held;
  t.equal((await b.req('POST', '/runs/busy/events', ev())).status, 201, 'accepted once the slot is free');
});

t.test('the global bound applies across runs', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  b.ctx.queue = new RunQueue(10, 1);
  let release!: () => void;
  const held = b.ctx.queue.run('a', () => new Promise<void>((r) => (release = r)));
  await expectRejected(t, b, 'b', () => b.req('POST', '/runs/b/events', ev()), 503, 'bridge_busy');
  t.equal((await b.req('GET', '/runs/b')).status, 503);
  release();
  await held;
  t.equal((await b.req('POST', '/runs/b/events', ev())).status, 201);
});
