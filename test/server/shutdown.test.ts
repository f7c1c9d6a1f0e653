import t from 'tap';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';
import { allEvents, expectRejected } from '../helpers/expect.js';

/**
 * Shutdown (SIGINT/SIGTERM, or `close()`): what the bridge admitted is answered before it closes
 * its connections, within a grace period; a request arriving meanwhile gets 503 `bridge_busy` in
 * the contract's envelope (not Fastify's own 503 body) and stores nothing.
 */
t.test('shutdown answers what it admitted and refuses the rest in the envelope', async (t) => {
  const b = await startTestBridge();
  t.equal((await b.req('POST', '/runs/other/events', ev({ id: 'o1' }))).status, 201);
  // An operation holding run `held` keeps the event posted behind it admitted but unanswered.
  let release!: () => void;
  const holding = b.ctx.queue.run('held', () => new Promise<void>((r) => (release = r)));
  const inFlight = b.req('POST', '/runs/held/events', ev({ id: 'h1' }));
  while (b.ctx.queue.pending < 2) await new Promise((r) => setTimeout(r, 5));

  let closed = false;
  const closing = b.close().then(() => {
    closed = true;
  });
  const refused = await expectRejected(
    t,
    b,
    'other',
    () => b.req('POST', '/runs/other/events', ev({ id: 'o2' })),
    503,
    'bridge_busy',
  );
  t.match(refused.body['message'], /shutting down/);
  t.equal((refused.headers as Headers).get('retry-after'), '1');
  t.equal((refused.headers as Headers).get('connection'), 'close');
  const health = await b.req('GET', '/health');
  t.equal(health.status, 503, 'health reports the shutdown too');
  t.equal(health.body['error'], 'bridge_busy');
  t.equal(closed, false, 'the bridge waits for what it admitted');

  release();
  await holding;
  const answered = await inFlight;
  t.equal(answered.status, 201, 'the admitted event is answered, not cut off');
  await closing;

  // The acknowledged event is durable; the refused one was never stored.
  const again = await startTestBridge(b.t);
  t.teardown(() => cleanup(again));
  t.same(
    (await allEvents(again, 'held')).map((e) => e['id']),
    ['h1'],
  );
  t.same(
    (await allEvents(again, 'other')).map((e) => e['id']),
    ['o1'],
  );
});

t.test('an operation that never settles holds shutdown for the grace period only', async (t) => {
  const b = await startTestBridge(undefined, { shutdownGraceMs: 200 });
  t.teardown(() => cleanup(b));
  t.equal((await b.req('POST', '/runs/stuck/events', ev({ id: 's1' }))).status, 201);
  void b.ctx.queue.run('stuck', () => new Promise<void>(() => {}));
  const started = Date.now();
  await b.close();
  const took = Date.now() - started;
  t.ok(took >= 150, `waited for the grace period (${took} ms)`);
  t.ok(took < 5000, 'then closed anyway');
});
