import { createHash } from 'node:crypto';
import { mkdir, readFile, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { localArtifactMap } from '../../src/cli/local-paths.js';
import {
  cleanup,
  commitFiles,
  ev,
  gitIn,
  makeTestEnv,
  startTestBridge,
  startupFailure,
  type TestBridge,
  type TestEnv,
} from '../helpers/bridge.js';
import { complete, driveToReady } from '../helpers/complete-run.js';
import { expectRejected } from '../helpers/expect.js';

/**
 * Issue 28 item 1: the repository's committed adapter pack is the default of every run that names
 * no adapter, and the floor of every run that names one. Read from HEAD, never from the working
 * tree the agent edits; a run never ends up silently uncommissioned in a commissioned repository.
 */

const ASSURED = { runtime: { requiredNodes: ['route'] }, finishLineAssurance: { required: true } };
const WEAK = { runtime: { requiredNodes: ['route'] }, finishLineAssurance: { required: false } };
const json = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * A test environment whose repository is a commissioned target: `.harness-pack` holds the trust
 * store (moved there, so the pin is unchanged) and `adapter` as `project-adapter.json`, committed.
 */
async function commissionedRepo(adapter: unknown = ASSURED): Promise<TestEnv> {
  const te = await makeTestEnv();
  const store = await readFile(join(te.repo, 'controls/review-trust.v1.json'), 'utf8');
  await gitIn(te.repo)('rm', '-q', '-r', 'controls');
  await commitFiles(te.repo, {
    '.harness-pack/controls/review-trust.v1.json': store,
    '.harness-pack/project-adapter.json': json(adapter),
  });
  return te;
}

async function bridgeFor(t: Test, te: TestEnv): Promise<TestBridge> {
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  return b;
}

const view = async (b: TestBridge, id: string) => (await b.req('GET', `/runs/${id}`)).body['run'];
const required = (run: { nodes: { id: string; required: boolean }[] }) =>
  run.nodes.filter((n) => n.required).map((n) => n.id);

/** A file under the artifact root; its absolute path. */
async function rootFile(b: TestBridge, name: string, value: unknown): Promise<string> {
  const path = join(b.t.artifactRoot, name);
  await writeFile(path, json(value));
  return path;
}

t.test('a run that names no adapter takes the repository committed one', async (t) => {
  const b = await bridgeFor(t, await commissionedRepo());
  const packSha = sha256(json(ASSURED));

  const health = await b.req('GET', '/health');
  t.match(health.body['repositoryAdapter'], {
    path: '.harness-pack/project-adapter.json',
    sha256: packSha,
    finishLineAssurance: true,
    requiredNodes: ['route', 'prove', 'handoff'],
  });
  t.same(health.body['defaultRequiredNodes'], ['route', 'prove', 'handoff']);

  const cases: [string, () => Promise<{ status: number }>][] = [
    [
      'a first event with a root',
      () => b.req('POST', '/runs/r1/events', ev({ artifactRoot: b.t.artifactRoot })),
    ],
    ['a first event with nothing', () => b.req('POST', '/runs/r2/events', ev())],
    ['POST /runs', () => b.req('POST', '/runs', { id: 'r3', artifactRoot: b.t.artifactRoot })],
  ];
  for (const [name, send] of cases) {
    const r = await send();
    t.equal(r.status, 201, name);
  }
  for (const id of ['r1', 'r2', 'r3']) {
    const run = await view(b, id);
    t.equal(run.commissioned, true, `${id} is commissioned`);
    t.same(run.adapter, { rootKind: 'repository', sha256: packSha, finishLineAssurance: true }, id);
    t.same(required(run), ['route', 'prove', 'handoff'], `${id} requires the pack's nodes`);
  }
});

t.test('an adapter weaker than the repository one is refused, and nothing is stored', async (t) => {
  const b = await bridgeFor(t, await commissionedRepo());
  const weak = await rootFile(b, 'weak-adapter.json', WEAK);
  await rootFile(b, 'none.json', {});

  t.test('named by a first event', async (t) => {
    await expectRejected(
      t,
      b,
      'w1',
      () => b.req('POST', '/runs/w1/events', ev({ artifactRoot: b.t.artifactRoot, adapterPath: weak })),
      400,
      'adapter_policy_violation',
    );
    // An adapter that says nothing about assurance does not require it either.
    await expectRejected(
      t,
      b,
      'w1',
      () =>
        b.req('POST', '/runs/w1/events', ev({ artifactRoot: b.t.artifactRoot, adapterPath: 'none.json' })),
      400,
      'adapter_policy_violation',
    );
  });

  t.test('named by POST /runs', async (t) => {
    await expectRejected(
      t,
      b,
      'w2',
      () => b.req('POST', '/runs', { id: 'w2', artifactRoot: b.t.artifactRoot, adapterPath: weak }),
      400,
      'adapter_policy_violation',
    );
  });

  t.test('found as project-adapter.json in the artifact root', async (t) => {
    await rootFile(b, 'project-adapter.json', WEAK);
    t.teardown(() => unlink(join(b.t.artifactRoot, 'project-adapter.json')));
    await expectRejected(
      t,
      b,
      'w3',
      () => b.req('POST', '/runs/w3/events', ev({ artifactRoot: b.t.artifactRoot })),
      400,
      'adapter_policy_violation',
    );
  });

  t.test('named by the first event of a run created with the default', async (t) => {
    t.equal((await b.req('POST', '/runs', { id: 'w4', artifactRoot: b.t.artifactRoot })).status, 201);
    const r = await expectRejected(
      t,
      b,
      'w4',
      () => b.req('POST', '/runs/w4/events', ev({ adapterPath: weak })),
      400,
      'adapter_policy_violation',
    );
    t.notOk(r.body['message'].includes(b.t.dir), 'no absolute path in the answer');
    t.equal((await view(b, 'w4')).adapter.rootKind, 'repository', 'the sealed default is kept');
  });
});

t.test("a run's own adapter as strict as the repository one wins", async (t) => {
  const b = await bridgeFor(t, await commissionedRepo());
  const own = { runtime: { requiredNodes: ['implement'] }, finishLineAssurance: { required: true } };
  const path = await rootFile(b, 'own-adapter.json', own);
  const first = await b.req(
    'POST',
    '/runs/s1/events',
    ev({ artifactRoot: b.t.artifactRoot, adapterPath: path }),
  );
  t.equal(first.status, 201, JSON.stringify(first.body));
  // A run created with the default names its own on its first event, before anything is appended.
  t.equal((await b.req('POST', '/runs', { id: 's2', artifactRoot: b.t.artifactRoot })).status, 201);
  const second = await b.req('POST', '/runs/s2/events', ev({ adapterPath: path }));
  t.equal(second.status, 201, JSON.stringify(second.body));
  for (const id of ['s1', 's2']) {
    const run = await view(b, id);
    t.same(run.adapter, { rootKind: 'artifact-root', sha256: sha256(json(own)), finishLineAssurance: true });
    t.equal(run.commissioned, true);
    t.same(required(run), ['implement', 'prove', 'handoff'], `${id} requires its own adapter's nodes`);
  }
});

t.test('an edited working copy of the pack cannot weaken it', async (t) => {
  const te = await commissionedRepo();
  // The agent rewrites the pack in the working tree before the bridge starts, and again after.
  const pack = join(te.repo, '.harness-pack/project-adapter.json');
  await writeFile(pack, json(WEAK));
  const b = await bridgeFor(t, te);
  await writeFile(pack, json({ ...WEAK, runtime: { requiredNodes: [] } }));

  t.equal((await b.req('POST', '/runs/e1/events', ev({ artifactRoot: b.t.artifactRoot }))).status, 201);
  const run = await view(b, 'e1');
  t.equal(run.commissioned, true, 'the committed pack applies');
  t.equal(run.adapter.sha256, sha256(json(ASSURED)), 'with the committed bytes');
  // Named, the working copy is a run's own adapter, and a weaker one.
  await expectRejected(
    t,
    b,
    'e2',
    () => b.req('POST', '/runs/e2/events', ev({ artifactRoot: b.t.artifactRoot, adapterPath: pack })),
    400,
    'adapter_policy_violation',
  );
});

t.test('without .harness-pack, project-adapter.json at the top level is the pack', async (t) => {
  const te = await makeTestEnv();
  await commitFiles(te.repo, { 'project-adapter.json': json(ASSURED) });
  // An uncommitted pack directory is not the repository's: the committed tree decides the path.
  await mkdir(join(te.repo, 'sub'));
  const b = await bridgeFor(t, te);
  t.equal((await b.req('POST', '/runs/p1/events', ev())).status, 201);
  t.match(await view(b, 'p1'), { commissioned: true, adapter: { rootKind: 'repository' } });
});

t.test('an adapter only in the working tree is not the repository one', async (t) => {
  const te = await makeTestEnv();
  await writeFile(join(te.repo, 'project-adapter.json'), json(ASSURED));
  const b = await bridgeFor(t, te);
  t.equal((await b.req('GET', '/health')).body['repositoryAdapter'], null);
  t.equal((await b.req('POST', '/runs/u1/events', ev())).status, 201);
  t.match(await view(b, 'u1'), { commissioned: false, adapter: null });
});

t.test('a committed pack the bridge cannot apply stops startup', async (t) => {
  const cases: [string, (repo: string) => Promise<unknown>][] = [
    ['invalid JSON', (repo) => commitFiles(repo, { 'project-adapter.json': '{' })],
    [
      'an unknown node',
      (repo) =>
        commitFiles(repo, { 'project-adapter.json': json({ runtime: { requiredNodes: ['deploy'] } }) }),
    ],
    [
      'a committed link',
      async (repo) => {
        await symlink('elsewhere.json', join(repo, 'project-adapter.json'));
        await commitFiles(repo, { 'elsewhere.json': json(ASSURED) });
      },
    ],
  ];
  for (const [name, commit] of cases) {
    const te = await makeTestEnv();
    t.teardown(() => rm(te.dir, { recursive: true, force: true }));
    await commit(te.repo);
    const err = await startupFailure({ env: te.env });
    t.equal((err as Error)?.name, 'StartupError', name);
    t.match(
      (err as Error)?.message,
      /committed adapter cannot be applied: project-adapter\.json at HEAD/,
      name,
    );
  }
});

t.test('a run created before the repository had a pack takes it with its first event', async (t) => {
  const te = await makeTestEnv();
  const before = await startTestBridge(te);
  t.equal((await before.req('POST', '/runs', { id: 'l1', artifactRoot: te.artifactRoot })).status, 201);
  t.equal((await view(before, 'l1')).adapter, null);
  await before.close();
  await commitFiles(te.repo, { 'project-adapter.json': json(ASSURED) });
  const b = await bridgeFor(t, te);
  t.equal((await b.req('POST', '/runs/l1/events', ev())).status, 201);
  t.match(await view(b, 'l1'), { commissioned: true, adapter: { rootKind: 'repository' } });
});

t.test('a completed run is judged under the pack as its commit holds it', async (t) => {
  // No assurance, so the structural gate alone completes it; the pack narrows nothing.
  const te = await makeTestEnv();
  await commitFiles(te.repo, { 'project-adapter.json': json({ finishLineAssurance: { required: false } }) });
  let b = await startTestBridge(te);
  await driveToReady(b, 'c1');
  t.equal((await complete(b, 'c1')).status, 201);
  // The working copy changes, then a commit changes the pack and the bridge restarts.
  await writeFile(join(te.repo, 'project-adapter.json'), json({ edited: true }));
  t.equal((await view(b, 'c1')).status, 'completed', 'an edited working copy is not drift');
  await b.close();
  await commitFiles(te.repo, { 'project-adapter.json': json(ASSURED) });
  b = await bridgeFor(t, te);
  t.equal((await view(b, 'c1')).status, 'completed', 'a later commit is not drift either');
  t.equal((await b.req('POST', '/runs/c2/events', ev())).status, 201);
  t.equal((await view(b, 'c2')).commissioned, true, 'a new run takes the new pack');
});

t.test('the evidence tools map artifacts with the adapter the bridge gives the run', async (t) => {
  const pack = { runtime: { artifactByNode: { prove: 'evidence/proof.json' } } };
  const te = await commissionedRepo(pack);
  const b = await bridgeFor(t, te);
  t.equal((await b.req('POST', '/runs/t1/events', ev({ artifactRoot: te.artifactRoot }))).status, 201);
  const bridge = (await view(b, 't1')).nodes.find((n: { id: string }) => n.id === 'prove').artifact;
  t.equal(bridge, 'evidence/proof.json');
  const env = { HARNESS_REPO_ROOT: te.repo };
  t.equal((await localArtifactMap(te.artifactRoot, undefined, env)).prove, bridge, 'as the bridge does');
  await writeFile(join(te.repo, '.harness-pack/project-adapter.json'), json({}));
  t.equal((await localArtifactMap(te.artifactRoot, undefined, env)).prove, bridge, 'from HEAD');
  const own = await rootFile(b, 'own.json', { runtime: { artifactByNode: { prove: 'p/proof.json' } } });
  t.equal((await localArtifactMap(te.artifactRoot, own, env)).prove, 'p/proof.json', 'a named one wins');
});
