import t, { type Test } from 'tap';
import { execa } from '#execa';
import { secret } from '../helpers/bridge.js';
import { CLI, clientStub } from '../helpers/cli.js';

/**
 * SPEC Authentication: the integrity key is held by the bridge process only, never by an agent. The
 * commands that call the bridge with the access token (emit, explain, run create, and approve, the
 * approval shell) refuse to start holding it: exit 2, one line naming the variable, no request.
 * Each command first runs once without the key against the same recording stub, so "no request"
 * is measured against a command that does reach it. Needs `npm run build`.
 */

t.test('every bridge client refuses to start holding the integrity key, before any request', async (t) => {
  const { upstream, root } = await clientStub(t);
  const key = secret();
  const base = {
    PATH: process.env['PATH'] ?? '',
    HOME: root,
    HARNESS_BRIDGE_URL: upstream.url.origin,
    HARNESS_BRIDGE_ACCESS_TOKEN: secret(),
  };
  const commands: [string, string[], Record<string, string>][] = [
    ['harness emit', ['emit', 'run-1', 'node.entered', 'intake', 'hello'], {}],
    ['harness explain', ['explain', 'run-1'], {}],
    ['harness run create', ['run', 'create', 'run-1', '--artifact-root', root], {}],
    [
      'harness approve',
      ['approve', 'run-1', '--owner', 'sec', '--scope', 'deploy', '--grant', '--yes'],
      { HARNESS_HUMAN_APPROVAL_TOKEN: secret() },
    ],
  ];
  for (const [who, args, extra] of commands) {
    const run = (env: Record<string, string>) =>
      execa(process.execPath, [CLI, ...args], { extendEnv: false, env, reject: false, stdin: 'ignore' });
    const reached = upstream.received.length;
    const allowed = await run({ ...base, ...extra });
    t.not(allowed.exitCode, 2, `${who} without the key: ${allowed.stderr}`);
    t.ok(upstream.received.length > reached, `${who} without the key reaches the stub`);

    await expectRefused(t, upstream, who, 'HARNESS_BRIDGE_INTEGRITY_KEY', () =>
      run({ ...base, ...extra, HARNESS_BRIDGE_INTEGRITY_KEY: key }),
    );
  }
});

t.test('the agent-side commands refuse the export key as they refuse the integrity key', async (t) => {
  // mcp, outbox flush, doctor and ui hold the access token only (SPEC Authentication 7); the export
  // key signs run bundles and is the bridge's alone (the hook's own refusal: hook-input.test.ts).
  const { upstream, root } = await clientStub(t);
  const env = {
    PATH: process.env['PATH'] ?? '',
    HOME: root,
    HARNESS_BRIDGE_URL: upstream.url.origin,
    HARNESS_BRIDGE_ACCESS_TOKEN: secret(),
    HARNESS_BRIDGE_EXPORT_KEY: secret(),
  };
  for (const [who, args] of [
    ['harness mcp', ['mcp']],
    ['harness outbox', ['outbox', 'flush']],
    ['harness doctor', ['doctor', '--project', root]],
    ['harness ui', ['ui']],
  ] as const) {
    await expectRefused(t, upstream, who, 'HARNESS_BRIDGE_EXPORT_KEY', () =>
      execa(process.execPath, [CLI, ...args], { extendEnv: false, env, reject: false, stdin: 'ignore' }),
    );
  }
});

/** `who` refused to start holding `variable`: exit 2, one line naming it, no request sent. */
async function expectRefused(
  t: Test,
  upstream: { received: unknown[] },
  who: string,
  variable: string,
  run: () => Promise<{ exitCode?: number | undefined; stderr: string; stdout: string }>,
): Promise<void> {
  const before = upstream.received.length;
  const refused = await run();
  t.equal(refused.exitCode, 2, `${who}: exit 2`);
  t.equal(
    refused.stderr,
    `harness: ${who} refuses to start: ${variable} must not be in its environment`,
    `${who}: one line naming the variable`,
  );
  t.equal(refused.stdout, '', `${who}: nothing on stdout`);
  t.equal(upstream.received.length, before, `${who}: no request reached the bridge`);
}
