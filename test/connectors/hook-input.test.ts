import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { startTestBridge } from '../helpers/bridge.js';
import { agentEnv, fixture, runHookCli, writeConnector } from '../helpers/hook.js';

/** What the hook refuses before doing anything: bad input, credentials it must never hold, usage. */
t.test('malformed standard input: exit 1, one line, nothing posted or queued', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => b.close());
  await writeConnector(b.t.artifactRoot, {});
  const valid = await fixture('claude-code', 'SessionStart', { cwd: b.t.artifactRoot });
  for (const input of [
    '',
    'not json',
    '[]',
    JSON.stringify({ ...valid, session_id: '' }),
    JSON.stringify({ ...valid, tool_input: 'x' }),
  ]) {
    const r = await runHookCli('claude-code', input, agentEnv(b));
    t.equal(r.code, 1, `${JSON.stringify(input).slice(0, 40)}: a non-blocking warning`);
    t.equal(r.stderr.trim().split('\n').length, 1, 'one line on stderr');
    t.equal(r.stdout, '');
  }
  t.equal((await b.req('GET', '/runs')).body['runs'].length, 0, 'no run was created');
  t.same(await readdir(join(b.t.dir, '.harness')).catch(() => []), [], 'nothing queued');
});

t.test('the hook refuses to run holding the human token, the integrity key or the export key', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => b.close());
  const payload = await fixture('claude-code', 'SessionStart', { cwd: b.t.artifactRoot });
  const values: Record<string, string> = {
    HARNESS_HUMAN_APPROVAL_TOKEN: b.t.env['HARNESS_HUMAN_APPROVAL_TOKEN']!,
    HARNESS_BRIDGE_INTEGRITY_KEY: b.t.env['HARNESS_BRIDGE_INTEGRITY_KEY']!,
    // Refused by its presence: the value is never read.
    HARNESS_BRIDGE_EXPORT_KEY: Buffer.alloc(48, 7).toString('base64'),
  };
  for (const [name, value] of Object.entries(values)) {
    const r = await runHookCli('claude-code', payload, { ...agentEnv(b), [name]: value });
    t.equal(r.code, 1, name);
    t.match(r.stderr, new RegExp(`^harness hook refuses to run: ${name}`));
  }
  t.equal((await b.req('GET', '/runs')).body['runs'].length, 0, 'nothing posted');
});

t.test('usage: a runtime it does not know is exit 2; an event it does not hook is exit 0', async (t) => {
  const env = { PATH: process.env['PATH'] ?? '', HOME: '/nonexistent' };
  const unknown = await runHookCli('cursor', '{}', env);
  t.equal(unknown.code, 2);
  t.match(unknown.stderr, /claude-code\|codex\|gemini/);
  const other = await runHookCli(
    'claude-code',
    { session_id: 's', hook_event_name: 'Notification', cwd: '/' },
    env,
  );
  t.equal(other.code, 0);
  t.equal(other.stdout + other.stderr, '');
});
