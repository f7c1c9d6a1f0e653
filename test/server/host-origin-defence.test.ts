import t from 'tap';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';
import { assertEnvelope, raw } from '../helpers/expect.js';

/**
 * CONTRACT 4, browser defence: DNS rebinding (a hostile name resolving to 127.0.0.1 carries that
 * name in Host) and cross-site requests (a non-loopback Origin) are refused before anything else,
 * and the bridge sends no CORS headers.
 */
t.test('Host and Origin checks', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const port = new URL(b.url).port;
  const token = b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!;
  t.equal((await b.req('POST', '/runs/h1/events', ev())).status, 201);

  const post = (headers: Record<string, string>) =>
    raw(b.url, {
      method: 'POST',
      path: '/runs/h1/events',
      headers: { 'content-type': 'application/json', 'x-harness-bridge-token': token, ...headers },
      body: JSON.stringify(ev()),
    });

  const refusedHosts = [
    `evil.example:${port}`,
    'evil.example',
    `127.0.0.1.evil.example:${port}`,
    `127.0.0.1:${Number(port) + 1}`,
    `127.0.0.256:${port}`,
    `127.1:${port}`,
    '127.0.0.1',
    `0.0.0.0:${port}`,
    `192.168.1.10:${port}`,
    `[::ffff:127.0.0.1]:${port}`,
    `localhost.:${port}`,
    `127.0.0.1:${port}@evil.example`,
    `127.0.0.1:${port} evil`,
  ];
  for (const host of refusedHosts) {
    t.test(`Host ${host}: 403 host_not_allowed, nothing stored`, async (t) => {
      const before = await b.journal('h1');
      const w = await post({ host });
      t.equal(w.status, 403, w.text);
      assertEnvelope(t, w.body, 'host_not_allowed');
      t.ok((await b.journal('h1')).equals(before), 'journal bytes unchanged');
      const r = await raw(b.url, { path: '/runs', headers: { host, 'x-harness-bridge-token': token } });
      t.equal(r.status, 403);
      assertEnvelope(t, r.body, 'host_not_allowed');
      // The rebinding check precedes authentication: an attacker learns nothing about the token.
      const h = await raw(b.url, { path: '/health', headers: { host } });
      t.equal(h.status, 403);
      assertEnvelope(t, h.body, 'host_not_allowed');
    });
  }

  for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`, `127.1.2.3:${port}`]) {
    t.test(`Host ${host} is the bridge`, async (t) => {
      const w = await post({ host });
      t.equal(w.status, 201, w.text);
    });
  }

  t.test('accepted Host values are remembered, refused ones never are', async (t) => {
    // More accepted spellings than the bridge remembers, then every refused value again.
    for (let i = 0; i < 20; i++) t.equal((await post({ host: `127.0.0.${i + 1}:${port}` })).status, 201);
    for (const host of refusedHosts) {
      const before = await b.journal('h1');
      const w = await post({ host });
      t.equal(w.status, 403, `${host} still refused`);
      assertEnvelope(t, w.body, 'host_not_allowed');
      t.ok((await b.journal('h1')).equals(before), 'journal bytes unchanged');
    }
  });

  const refusedOrigins = [
    'http://evil.example',
    `http://evil.example:${port}`,
    'https://evil.example',
    `ws://127.0.0.1:${port}`,
    'null',
    'file://',
    'not a url',
    'http://127.0.0.1.evil.example',
    'http://192.168.0.2:8788',
  ];
  for (const origin of refusedOrigins) {
    t.test(`Origin ${origin}: 403 origin_not_allowed, nothing stored`, async (t) => {
      const before = await b.journal('h1');
      const w = await post({ origin });
      t.equal(w.status, 403, w.text);
      assertEnvelope(t, w.body, 'origin_not_allowed');
      t.ok((await b.journal('h1')).equals(before), 'journal bytes unchanged');
      const h = await raw(b.url, { path: '/health', headers: { origin } });
      t.equal(h.status, 403);
      assertEnvelope(t, h.body, 'origin_not_allowed');
    });
  }

  // Loopback whatever the scheme a browser sends (CONTRACT 4 refuses non-loopback origins only).
  for (const origin of [
    'http://127.0.0.1:8788',
    'http://localhost:5173',
    `http://127.0.0.1:${port}`,
    `https://127.0.0.1:${port}`,
    'https://localhost:3000',
    'https://[::1]',
  ]) {
    t.test(`Origin ${origin} (loopback) is allowed`, async (t) => {
      const w = await post({ origin });
      t.equal(w.status, 201, w.text);
    });
  }

  t.test('no CORS headers, not even on a preflight', async (t) => {
    const journal = await b.journal('h1');
    const answers = [
      await raw(b.url, {
        method: 'OPTIONS',
        path: '/runs/h1/events',
        headers: {
          origin: 'http://127.0.0.1:8788',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'x-harness-bridge-token,content-type',
        },
      }),
      await raw(b.url, { path: '/health', headers: { origin: 'http://127.0.0.1:8788' } }),
      await raw(b.url, {
        path: '/runs',
        headers: { origin: 'http://localhost:8788', 'x-harness-bridge-token': token },
      }),
      await post({ origin: 'http://evil.example' }),
    ];
    t.equal(answers[0]!.status >= 400, true, 'a preflight is not answered with success');
    t.equal(answers.at(-1)!.status, 403, 'the cross-site write is refused');
    t.ok((await b.journal('h1')).equals(journal), 'and nothing was appended');
    for (const a of answers) {
      t.same(
        Object.keys(a.headers).filter((h) => h.startsWith('access-control-')),
        [],
        'no access-control-* header',
      );
    }
  });
});
