import { once } from 'node:events';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import t, { type Test } from 'tap';
import type { UiServerOptions } from '../../src/ui/server.js';
import { json, startRecordingUpstream, type UpstreamHandler } from '../helpers/recording-upstream.js';
import { SECURITY_HEADERS, startUi, type UiResponse } from '../helpers/ui-server.js';

/** One fake upstream and one UI server per case, both closed in teardown. */
async function scenario(t: Test, handler: UpstreamHandler, options: Partial<UiServerOptions> = {}) {
  const upstream = await startRecordingUpstream(handler);
  const ui = await startUi(upstream.url, options);
  t.teardown(async () => {
    await ui.app.close();
    await upstream.close();
  });
  return { upstream, ui };
}

function assertEnvelope(t: Test, res: UiResponse, status: number, code: string): void {
  t.equal(res.status, status);
  const body = res.json();
  t.equal(body['ok'], false);
  t.equal(body['error'], code);
  t.type(body['message'], 'string');
  t.same(body['problems'], []);
}

t.test('an upstream redirect is a 502 and is never followed', async (t) => {
  let followed = false;
  let status = 302;
  const { upstream, ui } = await scenario(t, (req, res) => {
    if (req.url === '/elsewhere') {
      followed = true;
      return json(200, { ok: true })(req, res);
    }
    res.writeHead(status, { location: '/elsewhere', 'content-type': 'application/json' });
    res.end('{}');
  });
  for (const path of ['/api/bridge/health', '/api/bridge/runs', '/api/bridge/runs/r1']) {
    assertEnvelope(t, await ui.get(path), 502, 'bridge_redirect_rejected');
  }
  // Every 3xx, 300 Multiple Choices included, whether or not it names a location.
  for (status of [300, 301, 303, 307, 308]) {
    const res = await ui.get('/api/bridge/runs');
    t.equal(res.status, 502, String(status));
    t.equal(res.json()['error'], 'bridge_redirect_rejected', String(status));
  }
  t.equal(followed, false);
  t.equal(upstream.received.length, 8);
});

t.test('a body over the byte cap is a 502, declared or streamed', async (t) => {
  const big = `{"ok":true,"pad":"${'x'.repeat(5000)}"}`;
  const declared = await scenario(
    t,
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(big.length) });
      res.end(big);
    },
    { maxBytes: 4096 },
  );
  assertEnvelope(t, await declared.ui.get('/api/bridge/runs'), 502, 'bridge_response_too_large');
  const streamed = await scenario(
    t,
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }); // chunked, no length
      for (let i = 0; i < 10; i++) res.write('x'.repeat(1000));
      res.end();
    },
    { maxBytes: 4096 },
  );
  assertEnvelope(t, await streamed.ui.get('/api/bridge/runs'), 502, 'bridge_response_too_large');
  // The default cap (no override) is 2 MiB: a streamed body of exactly that passes, a byte more not.
  const cap = 2 * 1024 * 1024;
  let size = cap + 1;
  const unset = await scenario(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }); // chunked, no length
    for (let left = size; left > 0; left -= 65536) res.write(' '.repeat(Math.min(65536, left)));
    res.end();
  });
  assertEnvelope(t, await unset.ui.get('/api/bridge/runs'), 502, 'bridge_response_too_large');
  size = cap;
  const atCap = await unset.ui.get('/api/bridge/runs');
  t.equal(atCap.status, 200, 'exactly 2 MiB passes');
  t.equal(atCap.text.length, cap);
  const under = await scenario(t, json(200, { ok: true, pad: 'x'.repeat(3000) }), { maxBytes: 4096 });
  t.equal((await under.ui.get('/api/bridge/runs')).status, 200, 'a body under the cap passes');
});

t.test('a declared length over the cap is refused before the body is read', async (t) => {
  // The upstream declares far more than the cap, sends a few bytes and stalls: only the declared
  // length can answer before the deadline (the streamed count never reaches the cap).
  const { ui } = await scenario(
    t,
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(64 * 1024 * 1024) });
      res.write('{"ok":true,"pad":"');
    },
    { maxBytes: 4096, timeoutMs: 5000 },
  );
  const started = Date.now();
  assertEnvelope(t, await ui.get('/api/bridge/runs/r1'), 502, 'bridge_response_too_large');
  t.ok(Date.now() - started < 2500, 'answered without waiting for the stalled body');
});

t.test('the deadline gives 504 whether headers or the body stall', async (t) => {
  const noHeaders = await scenario(t, () => {}, { timeoutMs: 150 });
  const started = Date.now();
  assertEnvelope(t, await noHeaders.ui.get('/api/bridge/runs'), 504, 'bridge_timeout');
  t.ok(Date.now() - started < 1000, 'answered near the 150 ms deadline');
  const slowBody = await scenario(
    t,
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"ok":');
    },
    { timeoutMs: 150 },
  );
  assertEnvelope(t, await slowBody.ui.get('/api/bridge/runs/r1'), 504, 'bridge_timeout');
  const fast = await scenario(t, json(200, { ok: true }), { timeoutMs: 150 });
  t.equal((await fast.ui.get('/api/bridge/health')).status, 200, 'a prompt bridge is not cut off');
});

t.test('a bridge that is down is a 502 bridge_unreachable', async (t) => {
  const { upstream, ui } = await scenario(t, json(200, {}));
  await upstream.close();
  const res = await ui.get('/api/bridge/health');
  assertEnvelope(t, res, 502, 'bridge_unreachable');
  // The cause names the address and the library's code; the browser gets neither.
  t.equal(res.json()['message'], 'The bridge could not be reached');
  t.notOk(res.text.includes(upstream.url.port), 'no port');
  t.notMatch(res.text, /ECONNREFUSED/);
});

t.test('a browser that goes away aborts the upstream call before the deadline', async (t) => {
  let upstreamClosed: (at: number) => void = () => {};
  const closed = new Promise<number>((resolve) => {
    upstreamClosed = resolve;
  });
  // The upstream never answers; only the proxy closing its request ends the connection.
  const { upstream, ui } = await scenario(
    t,
    (req) => req.socket.once('close', () => upstreamClosed(Date.now())),
    {
      timeoutMs: 10_000,
    },
  );
  const browser = connect(Number(new URL(ui.origin).port), '127.0.0.1');
  browser.on('error', () => {});
  browser.write(`GET /api/bridge/runs HTTP/1.1\r\nhost: ${ui.host}\r\n\r\n`);
  await new Promise((resolve) => setTimeout(resolve, 100));
  const gone = Date.now();
  browser.destroy();
  const at = await Promise.race([closed, new Promise<null>((resolve) => setTimeout(resolve, 3000, null))]);
  t.equal(upstream.received.length, 1, 'the call reached the upstream');
  t.ok(at !== null && at - gone < 3000, 'the upstream request closed long before the 10 s deadline');
});

t.test('a browser gone before the handler runs starts no upstream call', async (t) => {
  let handled: () => void = () => {};
  const ran = new Promise<void>((resolve) => {
    handled = resolve;
  });
  const upstream = await startRecordingUpstream(() => {});
  // Holds each request before its handler until the browser's connection has closed.
  const ui = await startUi(upstream.url, { timeoutMs: 10_000 }, (app) => {
    app.addHook('onRequest', (req, _reply, done) => {
      if (req.raw.socket.destroyed) done();
      else req.raw.socket.once('close', () => done());
    });
    app.addHook('onSend', (_req, _reply, payload, done) => {
      handled();
      done(null, payload);
    });
  });
  t.teardown(async () => {
    await ui.app.close();
    await upstream.close();
  });
  const browser = connect(Number(new URL(ui.origin).port), '127.0.0.1');
  browser.on('error', () => {});
  browser.write(`GET /api/bridge/runs HTTP/1.1\r\nhost: ${ui.host}\r\n\r\n`);
  await new Promise((resolve) => setTimeout(resolve, 100));
  browser.destroy();
  await ran;
  await new Promise((resolve) => setTimeout(resolve, 200));
  t.equal(upstream.received.length, 0, 'the bridge was never called');
});

t.test('a non-JSON upstream body is a 502, never relayed as HTML', async (t) => {
  const { ui } = await scenario(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<script>alert(1)</script>');
  });
  const res = await ui.get('/api/bridge/runs');
  assertEnvelope(t, res, 502, 'bridge_bad_response');
  t.notMatch(res.text, /script/);
});

t.test('the media type must be exactly application/json; parameters may follow', async (t) => {
  let type = '';
  const { ui } = await scenario(t, (_req, res) => {
    res.writeHead(200, { 'content-type': type });
    res.end('{"ok":true}');
  });
  for (type of [
    'application/json-seq',
    'application/json-patch+json',
    'application/json, text/html',
    'text/html; x=application/json',
  ]) {
    assertEnvelope(t, await ui.get('/api/bridge/runs'), 502, 'bridge_bad_response');
  }
  for (type of ['application/json; charset=utf-8', 'Application/JSON']) {
    const res = await ui.get('/api/bridge/runs');
    t.equal(res.status, 200, type);
    t.equal(res.text, '{"ok":true}', type);
  }
});

t.test('an encoded upstream body is a 502, never relayed to be decoded by the browser', async (t) => {
  const { ui } = await scenario(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    res.end('{"ok":true}');
  });
  assertEnvelope(t, await ui.get('/api/bridge/runs'), 502, 'bridge_bad_response');
});

t.test('a health 200 whose JSON body is not an object is a 502, not an empty health', async (t) => {
  for (const body of ['[{"ok":true,"dataDir":"/abs"}]', 'null', '"ok"', '42', 'true']) {
    const { upstream, ui } = await scenario(t, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    });
    const res = await ui.get('/api/bridge/health');
    assertEnvelope(t, res, 502, 'bridge_bad_response');
    t.notMatch(res.text, /\/abs/, `${body}: nothing of the upstream body reaches the browser`);
    t.equal(upstream.received.length, 1);
    // Only health's success body is cut; the same JSON on another route is relayed as bytes.
    const runs = await ui.get('/api/bridge/runs');
    t.equal(runs.status, 200, `${body} on /runs`);
    t.equal(runs.text, body);
  }
});

t.test('a refused upstream body on a pipelined connection does not end the UI process', async (t) => {
  // Request 1 waits on a slow upstream answer while request 2's upstream answer is refused at
  // once: the proxy drops a body undici is still reading, and undici's 'error' for it must be
  // heard (it used to end `harness ui` with an unhandled RequestAbortedError).
  const refusals = {
    redirect: ['bridge_redirect_rejected', 302, { location: '/x', 'content-type': 'application/json' }],
    html: ['bridge_bad_response', 200, { 'content-type': 'text/html' }],
    gzip: ['bridge_bad_response', 200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }],
  } as const;
  for (const [kind, [code, status, headers]] of Object.entries(refusals)) {
    const { ui } = await scenario(t, (req, res) => {
      if (req.url === '/runs/slow') {
        setTimeout(() => json(200, { ok: true })(req, res), 300);
        return;
      }
      if (req.url === '/health') return json(200, { ok: true })(req, res);
      res.writeHead(status, headers);
      res.end('{}');
    });
    const host = `host: ${ui.host}\r\n`;
    const answers = await pipelined(
      ui.origin,
      `GET /api/bridge/runs/slow HTTP/1.1\r\n${host}\r\nGET /api/bridge/runs/other HTTP/1.1\r\n${host}connection: close\r\n\r\n`,
    );
    t.same(
      [...answers.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => m[1]),
      ['200', '502'],
      `${kind}: both answered, in order`,
    );
    t.match(answers, `"error":"${code}"`, kind);
    t.equal((await ui.get('/api/bridge/health')).status, 200, `${kind}: the UI server still serves`);
  }
});

t.test('a request that reaches the UI server while it closes gets a real answer', async (t) => {
  // Request 2 arrives behind request 1, still being proxied, after close() began: it is answered
  // like any other (security headers, connection: close), not with Fastify's own 503 body.
  let release = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const upstream = await startRecordingUpstream((req, res) => {
    const answer = json(200, { ok: true });
    if (upstream.received.length === 1) void held.then(() => answer(req, res));
    else answer(req, res);
  });
  t.teardown(() => upstream.close());
  const ui = await startUi(upstream.url);
  const until = async (done: () => boolean, ms: number) => {
    for (const end = Date.now() + ms; !done() && Date.now() < end; ) await sleep(5);
  };
  const request = `GET /api/bridge/health HTTP/1.1\r\nhost: ${ui.host}\r\n\r\n`;
  const socket = connect(Number(new URL(ui.origin).port), '127.0.0.1');
  let text = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    text += chunk;
  });
  const ended = once(socket, 'close');
  socket.write(request);
  await until(() => upstream.received.length === 1, 10_000);
  const closing = ui.app.close();
  await sleep(50);
  socket.write(request);
  // Proxied, request 2 reaches the bridge; refused, it never does (a second at most is waited).
  await until(() => upstream.received.length === 2, 1_000);
  release();
  await ended;
  await closing;
  const answers = text.split(/(?=HTTP\/1\.1 )/);
  t.same(
    answers.map((a) => a.slice(9, 12)),
    ['200', '200'],
    'both answered by the proxy',
  );
  const second = answers[1] ?? '';
  t.match(second, /\r\nconnection: close\r\n/i);
  for (const [name, value] of Object.entries(SECURITY_HEADERS))
    t.ok(second.toLowerCase().includes(`${name}: ${value.toLowerCase()}`), `${name} on the answer`);
  t.match(second, /\{"ok":true\}$/);
});

/** Writes `bytes` (several requests) to one connection and reads until the server closes it. */
function pipelined(origin: string, bytes: string): Promise<string> {
  const url = new URL(origin);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(text));
    socket.write(bytes);
  });
}
