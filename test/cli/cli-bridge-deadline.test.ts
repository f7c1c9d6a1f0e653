import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import t from 'tap';
import { execa } from '#execa';
import { BridgeTimeout, bodyText, bridgeRequest } from '../../src/cli/http.js';
import { CLI } from '../helpers/cli.js';
import { silentBridge } from '../helpers/silent-bridge.js';

/**
 * A client command never hangs its caller: every request to the bridge is bounded by
 * HARNESS_CLIENT_TIMEOUT_MS from the request to the answer's last byte. The stand-ins
 * (silentBridge) accept the connection and then say nothing (a stopped or wedged bridge), or send
 * the headers and stall the body.
 */

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

t.test('the body is read against the deadline on its own, and cancelled when it passes', async (t) => {
  let cancelled = false;
  // A body that never ends and that nothing but the reader's own race can stop.
  const stalled = new Response(
    new ReadableStream<Uint8Array>({
      start: (c) => c.enqueue(new TextEncoder().encode('{"ok":')),
      pull: () => new Promise<void>(() => {}),
      cancel: () => {
        cancelled = true;
      },
    }),
  );
  const controller = new AbortController();
  setTimeout(() => controller.abort(new Error('deadline')), 200);
  const started = Date.now();
  await t.rejects(bodyText(stalled, controller.signal), /deadline/);
  t.ok(Date.now() - started < 5_000, 'rejected at the deadline');
  t.ok(cancelled, 'the body was cancelled, so its connection closes');
  const whole = new Response('{"ok":true}');
  t.equal(
    await bodyText(whole, new AbortController().signal),
    '{"ok":true}',
    'a whole body is read as it is',
  );
});

t.test(
  'HARNESS_CLIENT_TIMEOUT_MS outside 1000..600000: exit 2 before any request, whatever the command',
  async (t) => {
    const bridge = await silentBridge(t, false);
    const commands = [
      ['explain', 'run-1'],
      ['approve', 'run-1', '--owner', 'o', '--scope', 's', '--grant', '--yes'],
      ['watch', 'run-1'],
      ['browser-relay', 'run-1', '--origin', 'http://localhost:5173'],
      ['mcp'],
    ];
    for (const value of ['999', '600001', 'soon', '-1'])
      for (const args of commands) {
        const r = await execa(process.execPath, [CLI, ...args], {
          extendEnv: false,
          env: env(bridge.origin, {
            HARNESS_CLIENT_TIMEOUT_MS: value,
            HARNESS_HUMAN_APPROVAL_TOKEN: 'h'.repeat(40),
          }),
          reject: false,
          stdin: 'ignore',
          timeout: 60_000,
        });
        t.equal(r.exitCode, 2, `${args[0]} ${value}`);
        t.equal(r.stderr, 'harness: HARNESS_CLIENT_TIMEOUT_MS must be an integer from 1000 to 600000', value);
      }
    t.equal(bridge.received(), '', 'nothing was sent');
  },
);

t.test(
  'a source gives up on a silent bridge at its own bound and exits, leaving no request behind',
  async (t) => {
    // harness watch asks the bridge with its own 10 s bound; the request is abandoned then, so the
    // process ends at once instead of waiting out HARNESS_CLIENT_TIMEOUT_MS (180 s by default).
    const bridge = await silentBridge(t, false);
    const { HARNESS_CLIENT_TIMEOUT_MS: _default, ...plain } = env(bridge.origin);
    const started = Date.now();
    const r = await execa(process.execPath, [CLI, 'watch', 'run-1', '--root', process.cwd()], {
      extendEnv: false,
      env: plain,
      reject: false,
      timeout: 90_000,
    });
    t.equal(r.exitCode, 1, r.stderr);
    t.match(r.stderr, /the bridge did not answer for run run-1/);
    t.ok(Date.now() - started < 40_000, `exited ${Date.now() - started} ms after it started`);
  },
);

t.test(
  'harness mcp: a post the bridge does not answer is bridge_timeout, naming the id to repeat',
  async (t) => {
    const bridge = await silentBridge(t, false);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'mcp'],
      env: env(bridge.origin),
      stderr: 'pipe',
    });
    const client = new Client({ name: 'deadline-test', version: '0.0.0' });
    await client.connect(transport);
    t.teardown(() => client.close());
    const r = await client.callTool({
      name: 'harness.emit_event',
      arguments: {
        runId: 'run-1',
        type: 'node.entered',
        nodeId: 'intake',
        actor: 'runtime-a',
        message: 'm',
        status: 'ok',
      },
    });
    t.equal(r.isError, true);
    const body = JSON.parse((r.content as { text: string }[])[0]!.text) as { error: string; message: string };
    t.equal(body.error, 'bridge_timeout');
    const id = /call again with "id": "([0-9a-f-]{36})"/.exec(body.message)?.[1];
    t.ok(id, body.message);
    t.match(bridge.received(), `"id":"${id}"`, 'the id named is the one the request carried');
  },
);
