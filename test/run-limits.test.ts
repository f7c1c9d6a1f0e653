import t from 'tap';
import { RunQueue } from '../src/server/run-queue.js';
import { cleanup, ev, makeTestEnv, startTestBridge } from './helpers/bridge.js';
import { expectRejected } from './helpers/expect.js';

/**
 * CONTRACT 2, 3 and 7: a run holds at most HARNESS_MAX_EVENTS_PER_RUN events (409
 * run_history_full, continue under a new run ID), and a full queue answers 503 bridge_busy with
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
