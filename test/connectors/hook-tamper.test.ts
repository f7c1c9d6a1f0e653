import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { startTestBridge } from '../helpers/bridge.js';
import { agentEnv, eventRows, hookInProcess, sessionPayload, writeConnector } from '../helpers/hook.js';

/** A change to the runtime's hook configuration or to connector.json during a run is recorded. */
t.test('a write to the hook configuration or connector.json is recorded as gate.fired warn', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => b.close());
  const project = b.t.artifactRoot;
  await writeConnector(project, {});
  await mkdir(join(project, '.claude'), { recursive: true });
  await writeFile(join(project, '.claude', 'settings.json'), '{"hooks":{}}\n');
  const call = async (name: string) =>
    hookInProcess(
      'claude-code',
      await sessionPayload('claude-code', name, project, { session_id: 'tamper' }),
      agentEnv(b),
    );
  await call('SessionStart');
  const before = await eventRows(b, 'claude-code-tamper');
  t.equal((await call('PostToolUse.Bash')).exitCode, 0);
  t.same(await eventRows(b, 'claude-code-tamper'), before, 'nothing changed, nothing recorded');

  // The agent rewrites its own hooks through a shell command, and drops the connector's Red Zone.
  await writeFile(join(project, '.claude', 'settings.json'), '{"hooks":{"PreToolUse":[]}}\n');
  await writeConnector(project, { redZone: [] });
  t.equal((await call('PostToolUse.Bash')).exitCode, 0);
  const rows = await eventRows(b, 'claude-code-tamper');
  t.same(rows.slice(before.length), ['gate.fired redzone warn runtime-a'], 'one warning');
  const view = await b.req('GET', '/runs/claude-code-tamper?eventLimit=1');
  const message: string = view.body['run'].events[0].message;
  t.match(message, /\.claude\/settings\.json \(changed\)/);
  t.match(message, /\.harness\/connector\.json \(changed\)/);
});
