import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ADAPTER_ARTIFACT_PATHS_MAX_BYTES, NODE_IDS } from '../../src/contract/index.js';
import {
  ADAPTER_MAX_BYTES,
  AdapterPolicyError,
  defaultRunShape,
  resolveAdapter,
} from '../../src/validators/adapter.js';

async function dirs(t: any) {
  const base = await realpath(await mkdtemp(join(tmpdir(), 'hb-adapter-')));
  t.teardown(() => rm(base, { recursive: true, force: true }));
  const root = join(base, 'artifacts');
  const repo = join(base, 'repo');
  const extra = join(base, 'extra');
  const outside = join(base, 'outside');
  for (const d of [root, repo, extra, outside]) await mkdir(d);
  return { base, root, repo, extra, outside };
}
const adapter = {
  runtime: { requiredNodes: ['route'], artifactByNode: { prove: 'evidence/proof.json' } },
  finishLineAssurance: { required: true },
  ignored: { x: 1 },
};

t.test('no adapterPath and no project-adapter.json: null', async (t) => {
  const d = await dirs(t);
  t.equal(
    await resolveAdapter({
      adapterPath: undefined,
      realArtifactRoot: d.root,
      repoRoot: d.repo,
      adapterRoots: [],
    }),
    null,
  );
  t.equal(
    await resolveAdapter({
      adapterPath: undefined,
      realArtifactRoot: null,
      repoRoot: d.repo,
      adapterRoots: [],
    }),
    null,
  );
});

t.test(
  'project-adapter.json at the artifact root is consumed; prove and handoff stay required',
  async (t) => {
    const d = await dirs(t);
    await writeFile(join(d.root, 'project-adapter.json'), JSON.stringify(adapter));
    const r = await resolveAdapter({
      adapterPath: undefined,
      realArtifactRoot: d.root,
      repoRoot: d.repo,
      adapterRoots: [],
    });
    t.same(r?.requiredNodes, ['route', 'prove', 'handoff']);
    t.equal(r?.artifactByNode.prove, 'evidence/proof.json');
    t.equal(r?.artifactByNode.route, 'run/route.json');
    t.equal(r?.record.rootKind, 'artifact-root');
    t.equal(r?.record.finishLineAssurance, true);
    t.match(r?.record.sha256, /^[0-9a-f]{64}$/);
  },
);

t.test(
  'adapters inside the repo root and an adapter root resolve; relative paths use the artifact root',
  async (t) => {
    const d = await dirs(t);
    await writeFile(join(d.repo, 'a.json'), '{}');
    await writeFile(join(d.extra, 'b.json'), JSON.stringify({ finishLineAssurance: { required: false } }));
    await mkdir(join(d.root, 'pack'));
    await writeFile(join(d.root, 'pack/c.json'), '{}');
    const o = { realArtifactRoot: d.root, repoRoot: d.repo, adapterRoots: [d.extra] };
    t.equal(
      (await resolveAdapter({ ...o, adapterPath: join(d.repo, 'a.json') }))?.record.rootKind,
      'repo-root',
    );
    t.equal(
      (await resolveAdapter({ ...o, adapterPath: join(d.extra, 'b.json') }))?.record.rootKind,
      'adapter-root',
    );
    const rel = await resolveAdapter({ ...o, adapterPath: 'pack/c.json' });
    t.equal(rel?.record.rootKind, 'artifact-root');
    t.same(rel?.requiredNodes, defaultRunShape().requiredNodes);
  },
);

t.test('a root named through a link: an adapter named by its real path is inside it', async (t) => {
  const d = await dirs(t);
  await writeFile(join(d.repo, 'a.json'), '{}');
  const linked = join(d.base, 'repo-link');
  await symlink(d.repo, linked);
  const o = { realArtifactRoot: null, repoRoot: linked, adapterRoots: [] };
  t.equal(
    (await resolveAdapter({ ...o, adapterPath: join(d.repo, 'a.json') }))?.record.rootKind,
    'repo-root',
  );
  t.equal(
    (await resolveAdapter({ ...o, adapterPath: join(linked, 'a.json') }))?.record.rootKind,
    'repo-root',
  );
});

const refuse = async (t: any, o: Parameters<typeof resolveAdapter>[0], fragment: string) => {
  await t.rejects(resolveAdapter(o), AdapterPolicyError);
  await resolveAdapter(o).catch((err: Error) => t.match(err.message, fragment));
};

t.test('adapter-policy: paths outside the allowed roots are refused', async (t) => {
  const d = await dirs(t);
  await writeFile(join(d.outside, 'a.json'), '{}');
  const o = { realArtifactRoot: d.root, repoRoot: d.repo, adapterRoots: [] };
  await refuse(t, { ...o, adapterPath: join(d.outside, 'a.json') }, 'outside the allowed roots');
  await refuse(t, { ...o, adapterPath: '../outside/a.json' }, 'outside the allowed roots');
  await refuse(t, { ...o, adapterPath: '/etc/passwd' }, 'outside the allowed roots');
});

t.test('adapter-policy: symlink escapes are refused (file link and directory link)', async (t) => {
  const d = await dirs(t);
  await writeFile(join(d.outside, 'a.json'), '{}');
  await symlink(join(d.outside, 'a.json'), join(d.repo, 'link.json'));
  await symlink(d.outside, join(d.repo, 'dirlink'));
  await symlink(join(d.outside, 'a.json'), join(d.root, 'project-adapter.json'));
  const o = { realArtifactRoot: d.root, repoRoot: d.repo, adapterRoots: [] };
  await refuse(t, { ...o, adapterPath: join(d.repo, 'link.json') }, 'symbolic link');
  await refuse(t, { ...o, adapterPath: join(d.repo, 'dirlink/a.json') }, 'symbolic link');
  await refuse(t, { ...o, adapterPath: undefined }, 'symbolic link');
});

/** project-adapter.json named relative to the artifact root. */
const atRoot = (d: Awaited<ReturnType<typeof dirs>>) => ({
  realArtifactRoot: d.root,
  repoRoot: d.repo,
  adapterRoots: [],
  adapterPath: 'project-adapter.json',
});

t.test('adapter-policy: invalid JSON, shapes and unknown node ids are refused', async (t) => {
  const d = await dirs(t);
  const o = atRoot(d);
  const cases: [string, string][] = [
    ['{not json', 'not valid JSON'],
    ['[]', 'must be a JSON object'],
    [JSON.stringify({ runtime: { requiredNodes: ['cloud-expansion'] } }), 'unknown node id cloud-expansion'],
    [JSON.stringify({ runtime: { artifactByNode: { nope: 'a.json' } } }), 'unknown node id nope'],
    [JSON.stringify({ runtime: { artifactByNode: { prove: '../escape.json' } } }), 'must not contain ..'],
    [JSON.stringify({ runtime: { artifactByNode: { prove: '/abs.json' } } }), 'must be relative'],
    [JSON.stringify({ runtime: { requiredNodes: 'prove' } }), 'array of node ids'],
    [JSON.stringify({ finishLineAssurance: { required: 'yes' } }), 'must be a boolean'],
    [JSON.stringify({ finishLineAssurance: true }), 'must be a boolean'],
    [JSON.stringify({ finishLineAssurance: null }), 'must be a boolean'],
    [JSON.stringify({ runtime: 'prove' }), 'runtime must be an object'],
    [JSON.stringify({ runtime: { artifactByNode: null } }), 'artifactByNode must be an object'],
    [JSON.stringify({ runtime: { artifactByNode: [] } }), 'artifactByNode must be an object'],
    [JSON.stringify({ runtime: { artifactByNode: { prove: 5 } } }), 'must be a non-empty path'],
    [
      JSON.stringify({ runtime: { artifactByNode: { prove: 'p'.repeat(1025) } } }),
      'must be a non-empty path',
    ],
  ];
  for (const [body, fragment] of cases) {
    await writeFile(join(d.root, 'project-adapter.json'), body);
    await refuse(t, o, fragment);
  }
});

t.test('adapter-policy: each bound holds up to the byte, and refuses one past it', async (t) => {
  const d = await dirs(t);
  const o = atRoot(d);
  const put = (doc: object, size?: number) =>
    writeFile(join(d.root, 'project-adapter.json'), JSON.stringify(doc).padEnd(size ?? 0, ' '));

  // The artifact paths as a completion seals each (`"<path>":"<64 hex digits>",`), 14 of them.
  const sealed = (map: Record<string, string>) =>
    Object.values(map).reduce((n, path) => n + Buffer.byteLength(JSON.stringify(path)) + 68, 0);
  const pathsOf = (total: number) => {
    const named = (pad: number) => Object.fromEntries(NODE_IDS.map((id) => [id, `${id}/${'p'.repeat(pad)}`]));
    const map: Record<string, string> = named(Math.floor((total - sealed(named(0))) / NODE_IDS.length));
    const last = NODE_IDS[NODE_IDS.length - 1]!;
    map[last] = `${map[last]}${'p'.repeat(total - sealed(map))}`;
    return map;
  };
  const atBound = pathsOf(ADAPTER_ARTIFACT_PATHS_MAX_BYTES);
  t.equal(sealed(atBound), ADAPTER_ARTIFACT_PATHS_MAX_BYTES);
  await put({ runtime: { artifactByNode: atBound } });
  t.same((await resolveAdapter(o))?.artifactByNode, atBound, 'paths taking exactly the bound are accepted');
  await put({ runtime: { artifactByNode: pathsOf(ADAPTER_ARTIFACT_PATHS_MAX_BYTES + 1) } });
  await refuse(t, o, `its paths take ${ADAPTER_ARTIFACT_PATHS_MAX_BYTES + 1} bytes`);

  await put({ runtime: { artifactByNode: { prove: 'p'.repeat(1024) } } });
  t.equal((await resolveAdapter(o))?.artifactByNode.prove, 'p'.repeat(1024), 'a path of 1024 characters');

  await put({}, ADAPTER_MAX_BYTES);
  t.ok(await resolveAdapter(o), `an adapter file of ${ADAPTER_MAX_BYTES} bytes`);
  await put({}, ADAPTER_MAX_BYTES + 1);
  await refuse(t, o, `larger than ${ADAPTER_MAX_BYTES} bytes`);
});

t.test(
  'finishLineAssurance.ignoredMayChange: relative globs are sealed, anything else refused',
  async (t) => {
    const d = await dirs(t);
    const o = atRoot(d);
    const globs = ['node_modules/.cache/**', '**/__pycache__/**'];
    await writeFile(
      join(d.root, 'project-adapter.json'),
      JSON.stringify({ finishLineAssurance: { required: true, ignoredMayChange: globs } }),
    );
    t.same((await resolveAdapter(o))?.record.ignoredMayChange, globs, 'sealed with the adapter record');
    await writeFile(
      join(d.root, 'project-adapter.json'),
      JSON.stringify({ finishLineAssurance: { required: true } }),
    );
    t.notOk((await resolveAdapter(o))?.record.ignoredMayChange, 'absent when the adapter names none');
    const may = (value: unknown) => JSON.stringify({ finishLineAssurance: { ignoredMayChange: value } });
    for (const [body, fragment] of [
      [may('node_modules/**'), 'must be an array of at most 100 globs'],
      [may(Array.from({ length: 101 }, (_, i) => `cache-${i}/**`)), 'must be an array of at most 100 globs'],
      [may(['../outside/**']), '"../outside/**" is not a relative glob'],
      [may(['/abs/**']), '"/abs/**" is not a relative glob'],
      [may(['a\\b']), 'is not a relative glob'],
      [may(['']), '"" is not a relative glob'],
      [may([7]), '7 is not a relative glob'],
      [may(['x'.repeat(257)]), 'is not a relative glob'],
    ] as const) {
      await writeFile(join(d.root, 'project-adapter.json'), body);
      await refuse(t, o, fragment);
    }
  },
);

t.test('defaultRunShape: all 14 nodes and the default artifacts', async (t) => {
  const s = defaultRunShape();
  t.equal(s.requiredNodes.length, 14);
  t.equal(s.artifactByNode.prove, 'proof/proof.json');
});
