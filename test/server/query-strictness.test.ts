import t from 'tap';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';
import { assertEnvelope, expectRejected, raw } from '../helpers/expect.js';

/**
 * CONTRACT 4 / SPEC Endpoints 5: only the route's own names, each once, plain decimal digits in
 * range; anything else is 400 invalid_query. Fastify's parsed query folds repeats and coerces
 * values, so each case here is one a lenient parser would let through.
 */
t.test('query strictness', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  t.equal((await b.req('POST', '/runs/q1/events', ev())).status, 201);

  const bad = (path: string) =>
    t.test(`GET ${path} -> 400 invalid_query`, async (t) => {
      const r = await b.req('GET', path);
      t.equal(r.status, 400, JSON.stringify(r.body));
      assertEnvelope(t, r.body, 'invalid_query');
      t.ok(r.body['problems'].length > 0, 'problems name what is wrong');
      t.equal(r.headers.get('x-harness-page-total'), null, 'no page headers on a refusal');
    });
  const good = (path: string, returned?: number) =>
    t.test(`GET ${path} -> 200`, async (t) => {
      const r = await b.req('GET', path);
      t.equal(r.status, 200, JSON.stringify(r.body));
      if (returned !== undefined) t.equal(r.headers.get('x-harness-page-returned'), String(returned));
    });

  for (const q of [
    'foo=1',
    'limit=1&foo=1',
    'limit=1&limit=1',
    'limit=1&limit=2',
    'cursor=0&cursor=0',
    'limit=0',
    'limit=51',
    'limit=-1',
    'limit=+1',
    'limit=1.0',
    'limit=1e1',
    'limit=0x10',
    'limit=%201',
    'limit=1%20',
    'limit=',
    'limit',
    'limit=%',
    'limit=abc',
    'limit=１',
    'cursor=-1',
    'cursor=1.5',
    'cursor=99999999999999999999',
    'cursor=9007199254740992',
    'eventLimit=5',
    'Limit=5',
    'limit[]=5',
    'limit[a]=5',
    '__proto__=1',
    'constructor=1',
    'hasOwnProperty=1',
    'toString=1',
  ]) {
    bad(`/runs?${q}`);
  }
  for (const q of [
    'eventLimit=0',
    'eventLimit=201',
    'eventLimit=100&eventLimit=100',
    'eventCursor=-1',
    'eventCursor=a',
    'limit=5',
    'cursor=0',
    'eventlimit=5',
    'eventLimit=5&x=',
  ]) {
    bad(`/runs/q1?${q}`);
  }
  bad('/health?x=1');
  bad('/health?limit=1');

  good('/runs?limit=1', 1);
  good('/runs?limit=50', 1);
  good('/runs?limit=007', 1);
  good('/runs?cursor=0', 1);
  good('/runs?cursor=5', 0);
  good('/runs?limit=25&cursor=0', 1);
  good('/runs?', 1);
  good('/runs/q1?eventLimit=1', 1);
  good('/runs/q1?eventLimit=200', 1);
  good('/runs/q1?eventCursor=0&eventLimit=200', 1);
  good('/runs/q1?eventCursor=9', 0);
  // Cursors have no upper bound but a safe integer (SPEC Limits: "integer, at least 0").
  good('/runs?cursor=1000000000', 0);
  good('/runs?cursor=9007199254740991', 0);
  good('/runs/q1?eventCursor=1000000000', 0);

  t.test('an out-of-range cursor is named with the range it must be in', async (t) => {
    const r = await b.req('GET', '/runs?cursor=9007199254740992');
    t.same(r.body['problems'], ['cursor must be an integer from 0 to 9007199254740991']);
    const r2 = await b.req('GET', '/runs?limit=51');
    t.same(r2.body['problems'], ['limit must be an integer from 1 to 50']);
  });

  t.test('query names are checked on the raw URL before the route runs', async (t) => {
    // An unknown run with a bad query is still a query refusal, not a 404.
    const r = await b.req('GET', '/runs/nope?bogus=1');
    t.equal(r.status, 400);
    assertEnvelope(t, r.body, 'invalid_query');
    const r2 = await raw(b.url, {
      path: '/runs?limit=1;cursor=0',
      headers: { 'x-harness-bridge-token': b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']! },
    });
    t.equal(r2.status, 400);
    assertEnvelope(t, r2.body, 'invalid_query');
  });

  t.test('writes accept no query parameters either (fail closed)', async (t) => {
    await expectRejected(
      t,
      b,
      'q1',
      () => b.req('POST', '/runs/q1/events?foo=1', ev()),
      400,
      'invalid_query',
    );
    await expectRejected(
      t,
      b,
      'q1',
      () => b.req('POST', '/runs/q1/events?eventLimit=5', ev()),
      400,
      'invalid_query',
    );
    // Names an object has by inheritance, and components that are not percent-encoding: a write
    // route has no query schema behind strictQuery, so these must be refused by it alone.
    for (const query of ['toString=1', 'constructor=1', '__proto__=1', '%ZZ=1', 'x=%', 'x=%E0%A4%A']) {
      await expectRejected(
        t,
        b,
        'q1',
        () => b.req('POST', `/runs/q1/events?${query}`, ev()),
        400,
        'invalid_query',
      );
    }
    await expectRejected(t, b, 'q2', () => b.req('POST', '/runs?x=1', { id: 'q2' }), 400, 'invalid_query');
    t.equal((await b.req('GET', '/runs/q2')).status, 404, 'no run created');
  });
});
