import { execFile } from 'node:child_process';
import { mkdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { hookCommand } from '../../src/connectors/ours.js';
import { cleanup, startTestBridge } from '../helpers/bridge.js';
import {
  connect,
  EVENTS,
  FILES,
  ourGroups,
  parsed,
  RUNTIME_NAMES,
  read,
  sandbox,
} from '../helpers/connect.js';
import { CLI } from '../helpers/paths.js';

/**
 * The hook command connect writes runs as it stands, with no `harness` on PATH: fed a SessionStart
 * payload through `sh -c`, exactly as the runtime would, it exits 0 and the session shows up on a
 * real bridge as run `<runtime>-<session id>`. A path with a space and a quote is quoted for the
 * shell. Needs `npm run build`.
 */

function sh(command: string, input: string, env: Record<string, string>, cwd: string) {
  return new Promise<{ code: number; stderr: string }>((resolve) => {
    const child = execFile('/bin/sh', ['-c', command], { env, cwd }, (err, _stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stderr }),
    );
    child.stdin!.end(input);
  });
}

t.test('the command written in each runtime config runs and reaches the bridge', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  for (const runtime of RUNTIME_NAMES)
    await t.test(runtime, async (t) => {
      const s = await sandbox(t, runtime);
      t.equal((await connect(s, runtime, 'project')).code, 0);
      const { hooks } = FILES[runtime].project;
      const [group] = ourGroups(parsed(hooks, await read(s, hooks)), EVENTS[runtime][0]!, runtime);
      const command: string = group.hooks[0].command;
      const session = `s-${runtime}-1`;
      const payload = JSON.stringify({
        session_id: session,
        hook_event_name: 'SessionStart',
        cwd: s.project,
        source: 'startup',
      });
      // PATH names a folder with no programs: the command must name node and harness itself.
      const env = {
        PATH: s.project,
        HOME: s.home,
        HARNESS_BRIDGE_URL: b.url,
        HARNESS_BRIDGE_ACCESS_TOKEN: b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!,
      };
      const r = await sh(command, payload, env, s.project);
      t.equal(r.code, 0, r.stderr);
      const run = await b.req('GET', `/runs/${runtime}-${session}`);
      t.equal(run.status, 200, `run ${runtime}-${session} exists`);
      t.equal(run.body['run'].events[0].type, 'agent.connected');
    });
});

t.test('an entry path with a space and a quote is quoted for the shell', async (t) => {
  const s = await sandbox(t);
  const dir = join(s.root, "it's a dir");
  await mkdir(dir);
  await symlink(CLI, join(dir, 'main.cjs'));
  const command = hookCommand({ node: process.execPath, entry: join(dir, 'main.cjs') }, 'claude-code');
  t.match(command, / '.*it'\\''s a dir\/main\.cjs' hook claude-code$/);
  // No token: the event waits in the outbox (exit 1, a warning), but the command ran harness.
  const r = await sh(
    command,
    '{"session_id":"q","hook_event_name":"SessionStart"}',
    { PATH: s.project, HOME: s.home },
    s.project,
  );
  t.equal(r.code, 1, r.stderr);
  t.match(r.stderr, /harness hook: no access token/);
});
