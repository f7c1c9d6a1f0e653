import t from 'tap';
import { json, startRecordingUpstream } from '../helpers/recording-upstream.js';
import { ACCESS_TOKEN, startUi } from '../helpers/ui-server.js';

const RUNS_BODY = { ok: true, runs: [] };
const upstream = await startRecordingUpstream(
  json(200, RUNS_BODY, {
    'x-harness-page-offset': '0',
    'x-harness-page-limit': '25',
    'x-harness-page-returned': '0',
    'x-harness-page-total': '30',
    'x-harness-next-cursor': '25',
    'set-cookie': 'session=upstream; Path=/',
    'access-control-allow-origin': '*',
    'x-powered-by': 'bridge',
    'x-harness-page-evil': 'not-a-number',
    'retry-after': '5',
    // Decimal, and named like the bridge's headers, but not page headers: dropped all the same.
    'x-harness-total': '5',
    'x-harness-cursor': '7',
    'x-harness-bridge-token': ACCESS_TOKEN,
  }),
);
const ui = await startUi(upstream.url);
t.teardown(async () => {
  await ui.app.close();
  await upstream.close();
});
const last = () => upstream.received.at(-1)!;

t.test('the access token is injected server-side on every route', async (t) => {
  for (const path of ['/api/bridge/health', '/api/bridge/runs', '/api/bridge/runs/run-1']) {
    const res = await ui.get(path);
    t.equal(res.status, 200, path);
    t.equal(last().headers['x-harness-bridge-token'], ACCESS_TOKEN, path);
  }
  t.same(
    upstream.received.slice(-3).map((r) => r.url),
    ['/health', '/runs', '/runs/run-1'],
  );
});

t.test('browser credentials and token headers are never forwarded', async (t) => {
  const res = await ui.get('/api/bridge/runs', {
    cookie: 'session=browser',
    authorization: 'Bearer browser-secret',
    'x-harness-bridge-token': 'browser-made-up-token',
    'x-harness-human-token': 'browser-human-token',
    'proxy-authorization': 'Basic abc',
    'x-forwarded-for': '10.0.0.1',
  });
  t.equal(res.status, 200);
  const headers = last().headers;
  for (const name of [
    'cookie',
    'authorization',
    'x-harness-human-token',
    'proxy-authorization',
    'x-forwarded-for',
  ]) {
    t.equal(headers[name], undefined, `${name} not forwarded`);
  }
  t.equal(headers['x-harness-bridge-token'], ACCESS_TOKEN, 'the browser cannot replace the token');
  t.notMatch(JSON.stringify(headers), /browser/);
});

t.test('upstream requests carry accept: application/json, the token, and nothing else', async (t) => {
  for (const path of ['/api/bridge/health', '/api/bridge/runs', '/api/bridge/runs/run-1']) {
    t.equal((await ui.get(path, { accept: 'text/html', 'user-agent': 'browser' })).status, 200, path);
    const headers = last().headers;
    t.equal(headers['accept'], 'application/json', path);
    const extra = Object.keys(headers).filter(
      (name) => !['host', 'connection', 'accept', 'x-harness-bridge-token'].includes(name),
    );
    t.same(extra, [], `${path}: no other header`);
  }
});

t.test('only the route query names are forwarded, in a fixed form', async (t) => {
  await ui.get('/api/bridge/runs?limit=5&cursor=10&eventLimit=3&token=x&__proto__=1');
  t.equal(last().url, '/runs?limit=5&cursor=10');
  await ui.get('/api/bridge/runs/run-1?eventLimit=7&eventCursor=0&limit=9&cursor=2&debug=1');
  t.equal(last().url, '/runs/run-1?eventLimit=7&eventCursor=0');
  await ui.get('/api/bridge/health?verbose=1&limit=2');
  t.equal(last().url, '/health');
});

t.test('repeated or non-decimal query values are refused before any upstream request', async (t) => {
  const before = upstream.received.length;
  for (const query of ['limit=1&limit=2', 'limit=-1', 'cursor=1e3', 'limit=%201', 'cursor=0x10']) {
    const res = await ui.get(`/api/bridge/runs?${query}`);
    t.equal(res.status, 400, query);
    t.equal(res.json()['error'], 'invalid_query', query);
  }
  // Page sizes are at most 9 digits (docs/ui.md), cursors aside.
  for (const path of ['/api/bridge/runs?limit=1234567890', '/api/bridge/runs/r1?eventLimit=99999999999']) {
    const res = await ui.get(path);
    t.equal(res.status, 400, path);
    t.equal(res.json()['error'], 'invalid_query', path);
  }
  t.equal(upstream.received.length, before);
});

t.test('cursors: every non-negative safe integer the bridge accepts is forwarded, no other', async (t) => {
  const max = String(Number.MAX_SAFE_INTEGER);
  for (const [query, url] of [
    [`cursor=${max}`, `/runs?cursor=${max}`],
    ['cursor=1234567890', '/runs?cursor=1234567890'],
    ['cursor=0000000000000000000007', '/runs?cursor=0000000000000000000007'],
  ] as const) {
    const res = await ui.get(`/api/bridge/runs?${query}`);
    t.equal(res.status, 200, query);
    t.equal(last().url, url, query);
  }
  const res = await ui.get(`/api/bridge/runs/run-1?eventCursor=${max}&eventLimit=5`);
  t.equal(res.status, 200);
  t.equal(last().url, `/runs/run-1?eventLimit=5&eventCursor=${max}`);
  const before = upstream.received.length;
  const over = String(Number.MAX_SAFE_INTEGER + 1);
  for (const path of [`/api/bridge/runs?cursor=${over}`, `/api/bridge/runs/run-1?eventCursor=${over}`]) {
    const refused = await ui.get(path);
    t.equal(refused.status, 400, path);
    t.equal(refused.json()['error'], 'invalid_query', path);
  }
  t.equal(upstream.received.length, before, 'past the bridge range: no upstream request');
});

t.test('only content-type and decimal x-harness-page-* / next-cursor headers come back', async (t) => {
  const res = await ui.get('/api/bridge/runs');
  t.same(JSON.parse(res.text), RUNS_BODY, 'body relayed byte for byte');
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8');
  t.equal(res.headers['x-harness-page-offset'], '0');
  t.equal(res.headers['x-harness-page-total'], '30');
  t.equal(res.headers['x-harness-next-cursor'], '25');
  for (const name of [
    'set-cookie',
    'access-control-allow-origin',
    'x-powered-by',
    'x-harness-page-evil',
    'retry-after',
    'x-harness-total',
    'x-harness-cursor',
    'x-harness-bridge-token',
  ]) {
    t.equal(res.headers[name], undefined, `${name} dropped`);
  }
  t.notOk(JSON.stringify(res.headers).includes(ACCESS_TOKEN), 'the echoed token is in no header');
  t.equal(res.headers['cache-control'], 'no-store');
  t.equal(res.headers['x-content-type-options'], 'nosniff');
});

t.test('the browser gets application/json in UTF-8 whatever charset upstream names', async (t) => {
  const other = await startRecordingUpstream(
    json(200, RUNS_BODY, { 'content-type': 'application/json; charset=utf-7' }),
  );
  const ui2 = await startUi(other.url);
  t.teardown(async () => {
    await ui2.app.close();
    await other.close();
  });
  const res = await ui2.get('/api/bridge/runs');
  t.equal(res.status, 200);
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8');
});

t.test('an upstream error status and envelope pass through unchanged', async (t) => {
  const notFound = { ok: false, error: 'run_not_found', message: 'No run has this ID.', problems: [] };
  const other = await startRecordingUpstream(json(404, notFound));
  const ui2 = await startUi(other.url);
  t.teardown(async () => {
    await ui2.app.close();
    await other.close();
  });
  const res = await ui2.get('/api/bridge/runs/missing');
  t.equal(res.status, 404);
  t.same(res.json(), notFound);
});
