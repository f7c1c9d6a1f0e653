import { mkdir, realpath, rm, writeFile } from 'node:fs/promises';
import { delimiter, join, relative } from 'node:path';
import t from 'tap';
import { localArtifactMap } from '../src/cli/local-paths.js';
import { readBridgeEnv } from '../src/server/env.js';
import { cleanup, ev, makeTestEnv, startTestBridge } from './helpers/bridge.js';
import { expectRejected } from './helpers/expect.js';

/**
 * CONTRACT 2 and SPEC "Project adapter": HARNESS_ADAPTER_ROOTS, read from the environment (not
 * passed to the resolver by hand), lists extra roots an adapter may live under; an adapter outside
 * every root is refused before anything is stored.
 */
const adapter = JSON.stringify({ runtime: { requiredNodes: ['route'] } });

t.test('readBridgeEnv splits HARNESS_ADAPTER_ROOTS on the path delimiter', async (t) => {
  const te = await makeTestEnv();
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  const a = join(te.dir, 'roots-a');
  const b = join(te.dir, 'roots-b');
  t.same(readBridgeEnv({ ...te.env, HARNESS_ADAPTER_ROOTS: `${a}${delimiter}${b}` }).adapterRoots, [a, b]);
  t.same(readBridgeEnv({ ...te.env, HARNESS_ADAPTER_ROOTS: `${delimiter}${a}${delimiter}` }).adapterRoots, [
    a,
  ]);
  t.same(readBridgeEnv(te.env).adapterRoots, [], 'none by default');
});

t.test('an adapter under an environment root is accepted; one outside every root is refused', async (t) => {
  const te = await makeTestEnv();
  const base = await realpath(te.dir);
  const first = join(base, 'pack-a');
  const second = join(base, 'pack-b');
  const outside = join(base, 'outside');
  for (const d of [first, second, outside]) await mkdir(d);
  for (const d of [second, outside]) await writeFile(join(d, 'project-adapter.json'), adapter);
  te.env['HARNESS_ADAPTER_ROOTS'] = `${first}${delimiter}${second}`;
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));

  const ok = await b.req('POST', '/runs', {
    id: 'in-root',
    adapterPath: join(second, 'project-adapter.json'),
  });
  t.equal(ok.status, 201, JSON.stringify(ok.body));
  const run = await b.req('GET', '/runs/in-root');
  t.same(
    run.body['run'].nodes.filter((n: any) => n.required).map((n: any) => n.id),
    ['route', 'prove', 'handoff'],
    'the adapter under the second root decides the required nodes',
  );

  await expectRejected(
    t,
    b,
    'out-of-roots',
    () => b.req('POST', '/runs', { id: 'out-of-roots', adapterPath: join(outside, 'project-adapter.json') }),
    400,
    'adapter_policy_violation',
  );
  await expectRejected(
    t,
    b,
    'out-of-roots-ev',
    () =>
      b.req(
        'POST',
        '/runs/out-of-roots-ev/events',
        ev({ adapterPath: join(outside, 'project-adapter.json') }),
      ),
    400,
    'adapter_policy_violation',
  );
});

t.test(
  'a relative HARNESS_ADAPTER_ROOTS entry names the same directory to the bridge and the CLI',
  async (t) => {
    const te = await makeTestEnv();
    t.teardown(() => rm(te.dir, { recursive: true, force: true }));
    const base = await realpath(te.dir);
    const pack = join(base, 'rel-pack');
    const artifacts = join(base, 'rel-artifacts');
    const repo = join(base, 'rel-repo');
    for (const d of [pack, artifacts, repo]) await mkdir(d);
    await writeFile(
      join(pack, 'project-adapter.json'),
      JSON.stringify({ runtime: { artifactByNode: { prove: 'evidence/proof.json' } } }),
    );
    // tap runs this file in its own process: changing its working directory touches nothing else.
    const cwd = process.cwd();
    process.chdir(base);
    t.teardown(() => process.chdir(cwd));
    const env = {
      ...te.env,
      HARNESS_REPO_ROOT: repo,
      HARNESS_ADAPTER_ROOTS: `rel-pack${delimiter}${relative(base, repo)}`,
    };

    t.same(readBridgeEnv(env).adapterRoots, [pack, repo], 'the bridge resolves each entry against the cwd');
    const map = await localArtifactMap(artifacts, join(pack, 'project-adapter.json'), env);
    t.equal(map.prove, 'evidence/proof.json', 'the CLI accepts the adapter under the relative root');
  },
);
