import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { createServer, type Socket } from 'node:net';
import { dirname, join } from 'node:path';
import t from 'tap';
import { outboxFile, send } from '../../src/connectors/outbox.js';
import { DEFAULT_ARTIFACT_BY_NODE } from '../../src/contract/index.js';
import { restartTestBridge, startTestBridge } from '../helpers/bridge.js';
import { agentEnv, eventRows, fixture, GIT_PUSH_RULE, runHookCli, writeConnector } from '../helpers/hook.js';

/**
 * A hook never hangs its agent and never loses an event: with the bridge down, telemetry waits in
 * the run's outbox and is delivered first, in order, by the next call; a Red Zone decision without
 * an answer blocks.
 */
const NODES = [
  'intake',
  'route',
  'code-intelligence',
  'design-anchors',
  'system-design',
  'implement',
] as const;

async function writeArtifact(root: string, node: (typeof NODES)[number]) {
  const path = join(root, DEFAULT_ARTIFACT_BY_NODE[node]);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, `${node}\n`);
}

t.test(
  'bridge stopped, five hook calls, bridge started, one call: all six events stored once, in order',
  async (t) => {
    let b = await startTestBridge();
    const te = b.t;
    const port = new URL(b.url).port;
    const env = agentEnv(b);
    const runId = 'claude-code-outbox-1';
    const call = async () =>
      runHookCli(
        'claude-code',
        await fixture('claude-code', 'PostToolUse.Bash', { session_id: 'outbox-1', cwd: te.artifactRoot }),
        env,
      );
    await writeConnector(te.artifactRoot, {});
    const start = await runHookCli(
      'claude-code',
      await fixture('claude-code', 'SessionStart', { session_id: 'outbox-1', cwd: te.artifactRoot }),
      env,
    );
    t.equal(start.code, 0, start.stderr);
    const before = await eventRows(b, runId);
    await b.close();

    const box = outboxFile(te.dir, runId);
    for (const [i, node] of NODES.slice(0, 5).entries()) {
      await writeArtifact(te.artifactRoot, node);
      const r = await call();
      t.equal(r.code, 0, `call ${i + 1} exits 0 with the bridge down`);
      t.match(r.stderr, /waits in the outbox/, 'and says where the event went');
      t.equal((await readFile(box, 'utf8')).trim().split('\n').length, i + 1, `${i + 1} event(s) queued`);
    }
    t.equal((await stat(box)).mode & 0o777, 0o600, 'the outbox is private');

    // Back on the same port: the hooks' HARNESS_BRIDGE_URL is unchanged.
    b = await restartTestBridge(te, port);
    t.teardown(() => b.close());
    await writeArtifact(te.artifactRoot, NODES[5]);
    const r = await call();
    t.equal(r.code, 0, r.stderr);
    t.same(
      await eventRows(b, runId),
      [...before, ...NODES.map((n) => `artifact.written ${n} passed runtime-a`)],
      'the five queued events, then the sixth, each once',
    );
    await t.rejects(stat(box), { code: 'ENOENT' }, 'the outbox is empty');
  },
);

t.test('a bridge that accepts and never answers: the hook returns within its deadline', async (t) => {
  const sockets: Socket[] = [];
  const hang = createServer((s) => sockets.push(s));
  await new Promise<void>((r) => hang.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    hang.close();
  });
  const b = await startTestBridge();
  t.teardown(() => b.close());
  const url = `http://127.0.0.1:${(hang.address() as { port: number }).port}`;
  const env = agentEnv(b, url);
  await writeConnector(b.t.artifactRoot, { deadlineMs: 500, redZone: [GIT_PUSH_RULE] });
  const payload = (name: string, over = {}) =>
    fixture('claude-code', name, { session_id: 'hang', cwd: b.t.artifactRoot, ...over });

  let began = Date.now();
  let r = await runHookCli('claude-code', await payload('SessionStart'), env);
  t.equal(r.code, 0, 'telemetry: exit 0');
  t.match(r.stderr, /no answer within 500 ms/);
  t.ok(Date.now() - began < 10_000, `bounded (${Date.now() - began} ms for two events and a process start)`);
  t.equal(
    (await readFile(outboxFile(b.t.dir, 'claude-code-hang'), 'utf8')).trim().split('\n').length,
    2,
    'both events queued',
  );

  began = Date.now();
  r = await runHookCli(
    'claude-code',
    await payload('PreToolUse.Bash', { tool_input: { command: 'git push' } }),
    env,
  );
  t.equal(r.code, 2, 'a Red Zone decision without an answer blocks');
  t.match(r.stderr, /bridge did not answer/);
  t.ok(Date.now() - began < 10_000, `bounded (${Date.now() - began} ms)`);
});

t.test('a bridge restarted on its port waits out another holder of that port for a moment', async (t) => {
  const b = await startTestBridge();
  await b.close();
  // The holder takes a free port first, so no other process can be holding it.
  const holder = createServer();
  await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
  const port = String((holder.address() as { port: number }).port);
  const startedAt = Date.now();
  setTimeout(() => holder.close(), 400);
  const again = await restartTestBridge(b.t, port);
  t.teardown(() => again.close());
  t.equal(new URL(again.url).port, port, 'the same port');
  t.ok(Date.now() - startedAt >= 350, 'once the holder let it go');
  t.equal((await again.req('GET', '/health')).status, 200);
});

t.test('an outbox that cannot be looked at does not stop an event the bridge would take', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => b.close());
  t.equal((await b.req('POST', '/runs', { id: 'outbox-odd' })).status, 201);
  // Where the outbox directory should be, a file: every look inside it fails with ENOTDIR.
  await mkdir(join(b.t.dir, '.harness'), { recursive: true });
  await writeFile(join(b.t.dir, '.harness', 'outbox'), 'not a directory');
  const client = { url: new URL(b.url), token: b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']! };
  const event = {
    id: 'outbox-odd-1',
    type: 'gate.fired',
    nodeId: 'intake',
    status: 'warn',
    message: 'odd outbox',
    actor: 'runtime-a',
    runMode: 'live',
    eventSource: 'bridge',
  };
  const r = await send(client, b.t.dir, 'outbox-odd', event, 2000);
  t.equal(r.kind, 'stored');
  t.equal((await eventRows(b, 'outbox-odd')).at(-1), 'gate.fired intake warn runtime-a', 'stored');
});
