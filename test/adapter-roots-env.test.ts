import { mkdir, realpath, rm, writeFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import t from 'tap';
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
