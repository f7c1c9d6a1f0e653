import t from 'tap';
import { execa } from '#execa';
import { secret } from '../helpers/bridge.js';
import { CLI, clientStub } from '../helpers/cli.js';

/**
 * SPEC Authentication: credentials never travel in process arguments, which every local user can
 * read. Every command refuses an argument carrying the value of a credential it holds: exit 2,
 * one line naming the variable, nothing sent. Each command first runs with a harmless argument in
 * the same place against a recording stub, so "nothing sent" is measured against a command that
 * does send. Needs `npm run build`.
 */

t.test('no command sends a credential passed as an argument', async (t) => {
  const { upstream, root } = await clientStub(t);
  const access = secret();
  const human = secret();
  const env = {
    PATH: process.env['PATH'] ?? '',
    HOME: root,
    HARNESS_BRIDGE_URL: upstream.url.origin,
    HARNESS_BRIDGE_ACCESS_TOKEN: access,
    HARNESS_HUMAN_APPROVAL_TOKEN: human,
  };
  // [who, arguments with X where the value goes, the variable whose value is put there]
  const commands: [string, (x: string) => string[], string][] = [
    ['emit', (x) => ['emit', 'run-1', 'node.entered', 'intake', x], 'HARNESS_BRIDGE_ACCESS_TOKEN'],
    ['explain', (x) => ['explain', x], 'HARNESS_BRIDGE_ACCESS_TOKEN'],
    [
      'run create',
      (x) => ['run', 'create', 'run-1', '--artifact-root', root, '--title', x],
      'HARNESS_HUMAN_APPROVAL_TOKEN',
    ],
    // Inside a longer argument too.
    [
      'run create',
      (x) => ['run', 'create', 'run-1', '--artifact-root', root, `--title=a${x}`],
      'HARNESS_BRIDGE_ACCESS_TOKEN',
    ],
  ];
  for (const [who, args, variable] of commands) {
    const run = (x: string) =>
      execa(process.execPath, [CLI, ...args(x)], { extendEnv: false, env, reject: false, stdin: 'ignore' });
    const reached = upstream.received.length;
    const allowed = await run('harmless');
    t.not(allowed.exitCode, 2, `${who} with a harmless argument: ${allowed.stderr}`);
    t.ok(upstream.received.length > reached, `${who} with a harmless argument reaches the stub`);

    const before = upstream.received.length;
    const refused = await run(env[variable as keyof typeof env]);
    t.equal(refused.exitCode, 2, `${who}, ${variable}: exit 2`);
    t.equal(
      refused.stderr,
      `harness: an argument carries the value of ${variable}; credentials are read from the environment only`,
      `${who}: one line naming the variable`,
    );
    t.equal(upstream.received.length, before, `${who}: nothing reached the bridge`);
  }
});
