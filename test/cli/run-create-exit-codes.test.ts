import t from 'tap';
import { execa } from '#execa';
import { cleanup, startTestBridge } from '../helpers/bridge.js';
import { CLI, clientStub } from '../helpers/cli.js';
import { agentEnv } from '../helpers/mcp.js';

/**
 * `harness run create` exits as every command does (CONTRACT 8): 2 for a usage error, made before
 * any request; 1 when the bridge refuses the run; 0 when it is created or already there as asked.
 * Needs `npm run build`.
 */
const runCreate = (args: string[], env: Record<string, string>) =>
  execa(process.execPath, [CLI, 'run', 'create', ...args], {
    extendEnv: false,
    env,
    reject: false,
    stdin: 'ignore',
  });

t.test('a run ID that is not canonical is a usage error: exit 2, nothing sent', async (t) => {
  const { upstream, root } = await clientStub(t);
  const env = {
    PATH: process.env['PATH'] ?? '',
    HOME: root,
    HARNESS_BRIDGE_URL: upstream.url.origin,
    HARNESS_BRIDGE_ACCESS_TOKEN: 'a'.repeat(43),
  };
  const allowed = await runCreate(['run-1', '--artifact-root', root], env);
  t.equal(allowed.exitCode, 0, `a canonical ID: ${allowed.stderr}`);
  t.equal(upstream.received.length, 1, 'a canonical ID reaches the stub');
  // `..` and `.` would name another directory, a slash another route.
  for (const id of ['..', '.', 'run/1', '.hidden', 'run 1']) {
    const r = await runCreate([id, '--artifact-root', root], env);
    t.equal(r.exitCode, 2, `${JSON.stringify(id)}: ${r.stderr}`);
    t.equal(
      r.stderr,
      `harness: run ID ${JSON.stringify(id)} is not canonical`,
      `${JSON.stringify(id)}: one line`,
    );
    t.equal(r.stdout, '', `${JSON.stringify(id)}: nothing on stdout`);
  }
  t.equal(upstream.received.length, 1, 'no refused ID reached the stub');
});

t.test(
  'a run the bridge refuses (409 run_already_exists) exits 1; the stored run is unchanged',
  async (t) => {
    const b = await startTestBridge();
    t.teardown(() => cleanup(b));
    const env = agentEnv(b);
    const create = (title: string) =>
      runCreate(['rc', '--artifact-root', b.t.artifactRoot, '--title', title], env);
    const first = await create('one');
    t.equal(first.exitCode, 0, first.stderr);
    t.equal(JSON.parse(first.stdout).created, true);
    const again = await create('one');
    t.equal(again.exitCode, 0, `the same fields again: ${again.stderr}`);
    t.equal(JSON.parse(again.stdout).created, false);

    const stored = await b.req('GET', '/runs/rc');
    const before = await b.journal('rc');
    const other = await create('two');
    t.equal(other.exitCode, 1, 'another title: the bridge refuses, exit 1');
    t.match(other.stderr, /^run_already_exists: /, other.stderr);
    t.equal(other.stdout, '');
    t.same((await b.req('GET', '/runs/rc')).body['run'], stored.body['run'], 'the stored run is unchanged');
    t.ok((await b.journal('rc')).equals(before), 'journal bytes unchanged');
  },
);
