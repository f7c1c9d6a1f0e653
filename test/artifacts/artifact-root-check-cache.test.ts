import { createHash } from 'node:crypto';
import { readFile, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import t, { type Test } from 'tap';
import { DEFAULT_ARTIFACT_BY_NODE, NODE_IDS } from '../../src/contract/index.js';
import { RootCheckCache } from '../../src/workers/root-check-cache.js';
import { SETTLED_CTIME_MS } from '../../src/workers/tasks.js';
import { cleanup, ev, startTestBridge, type TestBridge } from '../helpers/bridge.js';
import { complete } from '../helpers/complete-run.js';
import { writeArtifact } from '../helpers/expect.js';

/**
 * Issue 29 item 5: a read of a completed commissioned run (its rules enumerate the root) walks
 * the root's lstat inventory once; while that inventory is the one its last whole check was taken
 * under, settled, the check stands without opening a file. Any change under the root moves a
 * ctime, which no user can set back: a rewrite with its size and mtime put back is still caught.
 */
const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
const settle = () => delay(SETTLED_CTIME_MS + 100);
const FILES = 300;
/** A whole second, so that utimes puts an mtime back to the nanosecond. */
const MTIME = 1_700_000_000;

async function commissioned(t: Test): Promise<{ b: TestBridge; named: string[] }> {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const root = b.t.artifactRoot;
  const adapter = await writeArtifact(
    root,
    'project-adapter.json',
    JSON.stringify({
      runtime: { requiredNodes: ['prove', 'handoff'] },
      finishLineAssurance: { required: true },
    }),
  );
  const named = Array.from({ length: FILES }, (_, i) => `data/d${i % 10}/${i}.txt`);
  for (const p of named) {
    await writeArtifact(root, p, `file ${p}\n`);
    await utimes(join(root, p), MTIME, MTIME);
  }
  const inventory = named.map((path) => ({ path, sha256: sha(`file ${path}\n`), size: 0 }));
  await writeArtifact(root, 'review/review.json', JSON.stringify({ schema: 'harness.review.v2', inventory }));
  const post = async (body: Record<string, unknown>) => {
    const r = await b.req('POST', '/runs/c/events', body);
    if (r.status !== 201) throw new Error(JSON.stringify(r.body));
  };
  await post(ev({ type: 'run.created', artifactRoot: root, adapterPath: adapter }));
  for (const nodeId of NODE_IDS) {
    await writeArtifact(root, DEFAULT_ARTIFACT_BY_NODE[nodeId], `artifact of ${nodeId}\n`);
    await post(ev({ nodeId }));
    await post(ev({ type: 'artifact.written', nodeId, artifact: DEFAULT_ARTIFACT_BY_NODE[nodeId] }));
    await post(ev({ type: 'gate.fired', nodeId, nodeState: 'passed', status: 'passed' }));
  }
  const done = await complete(b, 'c');
  if (done.status !== 201) throw new Error(JSON.stringify(done.body));
  return { b, named };
}

const status = async (b: TestBridge) => (await b.req('GET', '/runs/c')).body['run'];

t.test('an unchanged root answers reads from the kept check; a utimes-hidden rewrite does not', async (t) => {
  const { b, named } = await commissioned(t);
  await settle();
  const stats = b.ctx.rootChecks.stats;
  const run = await status(b);
  t.equal(run.status, 'completed', 'a settled read');
  t.equal(run.commissioned, true);
  t.equal(stats.kept, 1, 'a whole check is kept');
  const hits = stats.hits;
  const perFile = b.ctx.pool.digests.stats.hits;
  for (let i = 1; i <= 2; i++) {
    t.equal((await status(b)).status, 'completed');
    t.equal(stats.hits, hits + i, `read ${i}: answered by the kept check`);
  }
  t.equal(b.ctx.pool.digests.stats.hits, perFile, 'no file was opened for them');

  // Same size, mtime put back exactly (the fixture's whole-second mtime): only ctime moves.
  const victim = join(b.t.artifactRoot, named[FILES - 1] as string);
  const before = await stat(victim, { bigint: true });
  const text = await readFile(victim, 'utf8');
  await writeFile(victim, text.replace('file', 'FILE'));
  await utimes(victim, MTIME, MTIME);
  const after = await stat(victim, { bigint: true });
  t.equal(after.size, before.size, 'same size');
  t.equal(after.mtimeNs, before.mtimeNs, 'same mtime, to the nanosecond');
  t.not(after.ctimeNs, before.ctimeNs, 'ctime moved');
  // Read once the rewrite has settled: only its ctime tells it apart.
  await settle();
  const got = await status(b);
  t.equal(got.status, 'quarantined', 'the rewrite is found');
  t.same(got.quarantine.reasons, ['a file the finish-line documents name changed after completion']);
  t.equal(stats.hits, hits + 2, 'not answered by the kept check');
});

t.test('a root changed within the settling second is never kept', async (t) => {
  const { b } = await commissioned(t);
  await settle();
  // A file added under the root just before the read: another inventory, and not settled.
  await writeArtifact(b.t.artifactRoot, 'notes/later.md', 'x');
  t.equal((await status(b)).status, 'completed');
  t.equal(b.ctx.rootChecks.stats.kept, 0, 'nothing kept');
  await settle();
  t.equal((await status(b)).status, 'completed');
  t.equal(b.ctx.rootChecks.stats.kept, 1, 'kept once settled');
  t.equal((await status(b)).status, 'completed');
  t.equal(b.ctx.rootChecks.stats.hits, 1);
});

t.test('the kept checks: expiry, least recently used out, bounded in paths', async (t) => {
  let now = 0;
  const c = new RootCheckCache<string>(2, 100, () => now);
  c.set('a', 'A', 10, 50);
  c.set('b', 'B', 10, 1000);
  t.equal(c.get('a'), 'A');
  c.set('c', 'C', 10, 1000);
  t.equal(c.get('b'), null, 'b, least recently used, left');
  now = 51;
  t.equal(c.get('a'), null, 'a expired');
  t.equal(c.get('c'), 'C');
  c.set('d', 'D', 95, 1000);
  t.equal(c.get('c'), null, 'the path bound pushes out the oldest');
  c.set('e', 'E', 101, 1000);
  t.equal(c.get('e'), null, 'a check larger than the bound is not kept');
  t.same(c.stats, { hits: 2, kept: 4 });
});
