import t, { type Test } from 'tap';
import { json, startRecordingUpstream } from '../helpers/recording-upstream.js';
import { startUi } from '../helpers/ui-server.js';

const upstream = await startRecordingUpstream(json(200, { ok: true, runs: [] }));
const ui = await startUi(upstream.url);
t.teardown(async () => {
  await ui.app.close();
  await upstream.close();
});

/** Every refusal below must also prove the bridge never saw the request. */
async function refused(t: Test, path: string, headers: Record<string, string>, status: number, code: string) {
  const before = upstream.received.length;
  const res = await ui.get(path, headers);
  t.equal(res.status, status, `${path} ${JSON.stringify(headers)}`);
  t.equal(res.json()['error'], code);
  t.equal(upstream.received.length, before, 'nothing reached the bridge');
}

t.test('same-origin requests pass', async (t) => {
  const res = await ui.get('/api/bridge/runs', { origin: ui.origin, 'sec-fetch-site': 'same-origin' });
  t.equal(res.status, 200);
  t.equal(res.headers['access-control-allow-origin'], undefined, 'no CORS headers, ever');
  t.equal((await ui.get('/api/bridge/runs', { 'sec-fetch-site': 'none' })).status, 200, 'typed URL');
  t.equal(
    (await ui.get('/api/bridge/runs', { host: ui.host.replace('127.0.0.1', 'localhost') })).status,
    200,
  );
});

t.test('a cross-site Origin is 403 origin_not_allowed', async (t) => {
  for (const origin of ['http://evil.example', 'null', 'http://127.0.0.1:1', 'https://' + ui.host]) {
    await refused(t, '/api/bridge/runs', { origin }, 403, 'origin_not_allowed');
  }
});

t.test('Sec-Fetch-Site other than same-origin is 403 on the API', async (t) => {
  await refused(t, '/api/bridge/runs', { 'sec-fetch-site': 'cross-site' }, 403, 'origin_not_allowed');
  // Another port on localhost is same-site, not same-origin: still refused.
  await refused(t, '/api/bridge/health', { 'sec-fetch-site': 'same-site' }, 403, 'origin_not_allowed');
  await refused(
    t,
    '/api/bridge/runs',
    { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' },
    403,
    'origin_not_allowed',
  );
});

t.test('a cross-site navigation reaches no API path, and no write', async (t) => {
  const navigate = { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' };
  // Not the app's pages: anything under /api/ is refused whether or not a route matches it.
  for (const path of ['/api/bridge/nothing', '/api/', '/api/bridge/runs/r1/events']) {
    await refused(t, path, navigate, 403, 'origin_not_allowed');
  }
  // The exemption is for reading a page: a cross-site form POST is judged as cross-site first.
  const before = upstream.received.length;
  const post = await ui.send('POST', '/', { ...navigate, 'content-type': 'text/plain' }, 'x');
  t.equal(post.status, 403);
  t.equal(post.json()['error'], 'origin_not_allowed');
  t.equal(upstream.received.length, before);
});

t.test('a foreign Host (DNS rebinding) is 403 host_not_allowed', async (t) => {
  const port = ui.host.split(':')[1];
  for (const host of [
    `evil.example:${port}`,
    'evil.example',
    `127.0.0.1:${Number(port) + 1}`,
    `10.0.0.1:${port}`,
    `localhost.evil.example:${port}`,
    'localhost',
    '127.0.0.1',
  ]) {
    await refused(t, '/api/bridge/runs', { host }, 403, 'host_not_allowed');
  }
});

t.test('write methods are refused with the JSON envelope and never reach the bridge', async (t) => {
  for (const method of ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD']) {
    for (const path of ['/api/bridge/runs', '/api/bridge/runs/r1/events', '/api/bridge/runs/r1', '/']) {
      const before = upstream.received.length;
      const res = await ui.send(
        method,
        path,
        { 'content-type': 'application/json' },
        method === 'POST' ? '{}' : undefined,
      );
      t.equal(res.status, 405, `${method} ${path}`);
      t.equal(res.headers['allow'], 'GET');
      if (method !== 'HEAD') t.equal(res.json()['error'], 'method_not_allowed');
      t.equal(upstream.received.length, before);
    }
  }
  const reached = upstream.received.length;
  const odd = await ui.send('POST', '/api/bridge/runs/r1/events', { 'content-type': 'text/xml' }, '<x/>');
  t.equal(odd.status, 405, 'an unparseable body is still just a refused write');
  t.equal(upstream.received.length, reached, 'and reaches nothing upstream');
});

t.test('a path the router refuses is still refused 405 for any method but GET', async (t) => {
  for (const method of ['POST', 'OPTIONS', 'HEAD', 'PROPFIND']) {
    for (const path of ['/%zz', '/api/bridge/runs/%zz']) {
      const before = upstream.received.length;
      const res = await ui.send(method, path);
      t.equal(res.status, 405, `${method} ${path}`);
      t.equal(res.headers['allow'], 'GET', `${method} ${path}`);
      if (method !== 'HEAD') t.equal(res.json()['error'], 'method_not_allowed', `${method} ${path}`);
      t.equal(upstream.received.length, before);
    }
  }
});

t.test('path tricks reach nothing but the three routes', async (t) => {
  const invalidId = [
    '/api/bridge/runs/..%2F..%2Fhealth',
    '/api/bridge/runs/%2e%2e',
    '/api/bridge/runs/.hidden',
    '/api/bridge/runs/a%2Fevents',
    '/api/bridge/runs/a%00b',
    `/api/bridge/runs/${'a'.repeat(129)}`,
  ];
  for (const path of invalidId) await refused(t, path, {}, 400, 'invalid_run_id');
  const noRoute = [
    '/api/bridge/runs/r1/events',
    '/api/bridge/../health',
    '/api/bridge/runs/r1/../../health',
    '/api/bridge',
    '/api/bridge/',
    '/api/bridge/openapi.json',
    '/api/bridge/runs/r1/',
    '//api/bridge/runs',
  ];
  for (const path of noRoute) await refused(t, path, {}, 404, 'not_found');
  for (const id of ['Run_1.a-b', `R${'x'.repeat(127)}`]) {
    t.equal((await ui.get(`/api/bridge/runs/${id}`)).status, 200);
    t.equal(upstream.received.at(-1)!.url, `/runs/${id}`, 'a canonical ID reaches exactly its run');
  }
});

t.test('a path the router refuses is judged first, then answered in the envelope', async (t) => {
  // Bad percent-encoding or a run ID segment past maxParamLength never reaches a hook: the answer
  // must still be the browser defence's, then the UI's own envelope, not Fastify's (which echoes
  // the path and says 414).
  // (A run ID past maxParamLength matches no proxy route, so the app's catch-all answers 404.)
  const cases = [
    ['/api/bridge/runs/%zz', 'invalid_run_id', true],
    [`/api/bridge/runs/r${'a'.repeat(299)}`, 'not_found', false],
    ['/%zz', 'not_found', true],
  ] as const;
  for (const [path, code, byRouter] of cases) {
    await refused(t, path, { host: 'evil.example' }, 403, 'host_not_allowed');
    await refused(t, path, { origin: 'http://evil.example' }, 403, 'origin_not_allowed');
    await refused(t, path, {}, code === 'not_found' ? 404 : 400, code);
    const res = await ui.get(path);
    t.same(Object.keys(res.json()).sort(), ['error', 'message', 'ok', 'problems'], 'the envelope');
    t.notOk(res.text.includes('zz') || res.text.includes('aaaa'), 'the path is not echoed');
    if (byRouter) t.equal(res.headers['cache-control'], 'no-store');
    t.equal(res.headers['x-content-type-options'], 'nosniff', 'the security headers are sent');
  }
});
