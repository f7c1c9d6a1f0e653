import { createServer, type Server, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import { execa } from '#execa';
import { BridgeTimeout, bridgeRequest } from '../../src/cli/http.js';
import { CLI } from '../helpers/cli.js';

/**
 * A client command never hangs its caller: every request to the bridge is bounded by
 * HARNESS_CLIENT_TIMEOUT_MS from the request to the answer's last byte. The stand-ins accept the
 * connection and then say nothing (a stopped or wedged bridge), or send the headers and stall the
 * body.
 */
async function silentBridge(
  t: Test,
  headersFirst: boolean,
): Promise<{ origin: string; received: () => string }> {
  const sockets = new Set<Socket>();
  let received = '';
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('data', (chunk) => {
      received += chunk.toString();
      if (headersFirst && received.includes('\r\n\r\n'))
        socket.write(
          'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"ok":',
        );
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  t.teardown(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((done) => server.close(done));
  });
  const { port } = server.address() as { port: number };
  return { origin: `http://127.0.0.1:${port}`, received: () => received };
}

const env = (origin: string, extra: Record<string, string> = {}) => ({
  PATH: process.env['PATH'] ?? '',
  HOME: '/nonexistent',
  HARNESS_BRIDGE_URL: origin,
  HARNESS_BRIDGE_ACCESS_TOKEN: 'a'.repeat(40),
  HARNESS_CLIENT_TIMEOUT_MS: '1000',
  ...extra,
});

t.test(
  'harness emit against a bridge that never answers: exit 1 at the deadline, naming the ID to repeat',
  async (t) => {
    const bridge = await silentBridge(t, false);
    const started = Date.now();
    const r = await execa(process.execPath, [CLI, 'emit', 'run-1', 'node.entered', 'intake', 'hello'], {
      extendEnv: false,
      env: env(bridge.origin),
      reject: false,
      timeout: 60_000,
    });
    t.equal(r.exitCode, 1);
    t.ok(Date.now() - started < 20_000, 'it gave up at its deadline, not at the test timeout');
    const m =
      /^harness: the bridge at http:\/\/127\.0\.0\.1:\d+ gave no answer within 1 s \(HARNESS_CLIENT_TIMEOUT_MS\); it may have stored the event: post it again with --event-id ([0-9a-f-]{36}), which the bridge answers as a duplicate if it did$/.exec(
        r.stderr,
      );
    t.ok(m, `one line naming the event ID: ${r.stderr}`);
    t.match(bridge.received(), `"id":"${m?.[1]}"`, 'the ID named is the one the request carried');
    t.equal(r.stdout, '');
  },
);

t.test('--event-id is kept, and named back when the bridge does not answer', async (t) => {
  const bridge = await silentBridge(t, false);
  const r = await execa(
    process.execPath,
    [CLI, 'node', 'skip', 'run-1', 'live-smoke', '--reason', 'nothing deployed', '--event-id', 'mine-1'],
    { extendEnv: false, env: env(bridge.origin), reject: false, timeout: 60_000 },
  );
  t.equal(r.exitCode, 1);
  t.match(r.stderr, /post it again with --event-id mine-1,/);
  t.match(bridge.received(), '"id":"mine-1"');
});

t.test('a body that stalls after the headers is bounded too', async (t) => {
  const bridge = await silentBridge(t, true);
  const started = Date.now();
  await t.rejects(
    bridgeRequest('/health', {}, env(bridge.origin, { HARNESS_CLIENT_TIMEOUT_MS: '1000' })),
    BridgeTimeout,
  );
  t.ok(Date.now() - started < 10_000);
  t.match(bridge.received(), /^GET \/health HTTP\/1\.1/, 'the request was sent');
});

t.test('HARNESS_CLIENT_TIMEOUT_MS outside 1000..600000: exit 2 before any request', async (t) => {
  const bridge = await silentBridge(t, false);
  for (const value of ['999', '600001', 'soon', '-1']) {
    const r = await execa(process.execPath, [CLI, 'explain', 'run-1'], {
      extendEnv: false,
      env: env(bridge.origin, { HARNESS_CLIENT_TIMEOUT_MS: value }),
      reject: false,
      timeout: 60_000,
    });
    t.equal(r.exitCode, 2, value);
    t.equal(r.stderr, 'harness: HARNESS_CLIENT_TIMEOUT_MS must be an integer from 1000 to 600000', value);
  }
  t.equal(bridge.received(), '', 'nothing was sent');
});
