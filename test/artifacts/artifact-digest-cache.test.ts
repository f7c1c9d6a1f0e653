import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import t from 'tap';
import { checkArtifacts } from '../../src/server/artifact-check.js';
import { DigestCache } from '../../src/workers/digest-cache.js';
import { HashPool } from '../../src/workers/pool.js';
import run, { type ClaimResult, SETTLED_CTIME_MS } from '../../src/workers/tasks.js';
import { cleanup, startTestBridge } from '../helpers/bridge.js';
import { complete, driveToReady } from '../helpers/complete-run.js';

/**
 * Issue 28 item 7: reads of a completed run re-verify its artifacts (SPEC: no stale complete
 * state), but through a digest cache keyed by file identity (device, inode, size, mtime and ctime
 * in nanoseconds): an unchanged artifact costs an open and a stat, a changed one is hashed again.
 */
const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
const settle = () => delay(SETTLED_CTIME_MS + 100);

t.test('an unchanged artifact of a completed run costs a stat, not a hash, on each read', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'r');
  t.equal((await complete(b, 'r')).status, 201);
  await settle();
  const stats = b.ctx.pool.digests.stats;
  t.equal((await b.req('GET', '/runs/r')).body['run'].status, 'completed');
  const kept = stats.kept;
  t.ok(kept >= 14, `the 14 claimed artifacts' digests are kept (${kept} hashes kept so far)`);
  const hits = stats.hits;
  for (let i = 1; i <= 3; i++) {
    t.equal((await b.req('GET', '/runs/r')).body['run'].status, 'completed');
    t.equal(stats.hits, hits + 14 * i, `read ${i + 1}: every claimed artifact answered from the cache`);
  }
  t.equal(stats.kept, kept, 'and none read again');
  // The completion gate's check re-hashes them all (SPEC rule 10), the cache notwithstanding.
  const gate = await b.ctx.queue.run('r', async () => {
    const loaded = await b.ctx.store.load('r');
    if (loaded.kind !== 'open') throw new Error(`run is ${loaded.kind}`);
    try {
      return await checkArtifacts(b.ctx, loaded.run, 'gate');
    } finally {
      b.ctx.store.release(loaded.run);
    }
  });
  t.same(gate.problems, []);
  t.equal(stats.hits, hits + 14 * 3, 'the gate took no digest from the cache');
  t.equal(stats.kept, kept + 14, 'it read and hashed every claimed artifact');
});

t.test('a rewrite with its size and mtime put back still misses the cache: ctime moved', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const path = join(b.t.artifactRoot, 'handoff/final.md');
  await driveToReady(b, 'r', { 'handoff/final.md': 'the handoff as verified\n' });
  // A whole-second mtime, which utimes can put back exactly.
  await utimes(path, 1_700_000_000, 1_700_000_000);
  t.equal((await complete(b, 'r')).status, 201);
  await settle();
  t.equal((await b.req('GET', '/runs/r')).body['run'].status, 'completed');
  const hits = b.ctx.pool.digests.stats.hits;
  t.equal((await b.req('GET', '/runs/r')).body['run'].status, 'completed');
  t.ok(b.ctx.pool.digests.stats.hits >= hits + 14, 'the handoff is answered from the cache');

  const before = await stat(path, { bigint: true });
  await writeFile(path, 'THE HANDOFF AS VERIFIED\n');
  await utimes(path, 1_700_000_000, 1_700_000_000);
  const after = await stat(path, { bigint: true });
  t.same(
    [after.dev, after.ino, after.size, after.mtimeNs],
    [before.dev, before.ino, before.size, before.mtimeNs],
    'device, inode, size and mtime are what they were',
  );
  t.not(after.ctimeNs, before.ctimeNs, 'only ctime moved, and no user can set it back');
  t.not(sha(await readFile(path)), sha('the handoff as verified\n'), 'the bytes are not');
  const read = await b.req('GET', '/runs/r');
  t.equal(read.body['run'].status, 'quarantined');
  t.same(read.body['run'].quarantine.reasons, ['artifact handoff/final.md changed after completion']);
});

t.test(
  'the worker keeps no digest of a file changed under a second ago, and reads no file it knows',
  async (t) => {
    const root = await mkdtemp(join(tmpdir(), 'hb-digests-'));
    t.teardown(() => rm(root, { recursive: true, force: true }));
    await writeFile(join(root, 'a.txt'), 'abc');
    const claim = (opts: object = {}) =>
      (run({ op: 'claim', root, paths: ['a.txt'], ...opts }) as ClaimResult[])[0];
    const fresh = claim();
    t.match(fresh, { ok: true, sha256: sha('abc') });
    t.notOk(fresh?.ok && fresh.identity, 'a ctime under a second old: no identity to keep the digest under');
    await settle();
    const settled = claim();
    const identity = settled?.ok ? settled.identity : undefined;
    t.type(identity, 'string', 'settled: the digest may be kept');
    // A digest no file here has: answered without reading the file.
    const known = { identity: identity as string, sha256: 'f'.repeat(64) };
    t.match(claim({ known: [known] }), { ok: true, sha256: known.sha256, cached: true });
    t.match(
      claim({ known: [{ ...known, identity: 'another' }] }),
      { ok: true, sha256: sha('abc') },
      'another file',
    );
    // Bytes never scanned for these needles are read for the scan.
    t.match(claim({ known: [known], needles: ['secret'], clean: [null] }), { ok: true, sha256: sha('abc') });
    t.match(claim({ known: [known], needles: ['secret'], clean: [known.sha256] }), { cached: true });
  },
);

t.test('claims take digests from the cache only when asked to', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'hb-digests-'));
  const pool = new HashPool(1);
  t.teardown(async () => {
    await pool.close();
    await rm(root, { recursive: true, force: true });
  });
  await writeFile(join(root, 'a.txt'), 'abc');
  await settle();
  await pool.claimMany(root, ['a.txt']);
  t.same(pool.digests.stats, { hits: 0, kept: 1 });
  await pool.claimMany(root, ['a.txt']);
  t.same(pool.digests.stats, { hits: 0, kept: 2 }, 'without `cached` the file is hashed');
  t.match(await pool.claimMany(root, ['a.txt'], { cached: true }), [{ sha256: sha('abc'), cached: true }]);
  t.same(pool.digests.stats, { hits: 1, kept: 2 });
});

t.test('the cache is bounded: least recently used out, and no digest outlives its time', async (t) => {
  let now = 0;
  const cache = new DigestCache(2, 1000, () => now);
  const hashed = (path: string) =>
    ({
      ok: true,
      path,
      sha256: sha(path),
      size: 1,
      mtimeMs: 0,
      leaked: false,
      identity: `id-${path}`,
    }) as const;
  cache.record('/root', hashed('a'));
  cache.record('/root', hashed('b'));
  t.ok(cache.get('/root', 'a'), 'a used: b is now the least recent');
  cache.record('/root', hashed('c'));
  t.equal(cache.size, 2);
  t.equal(cache.get('/root', 'b'), null, 'b went out');
  t.same(cache.get('/root', 'a'), { identity: 'id-a', sha256: sha('a'), hashedAt: 0 });
  t.equal(cache.get('/other', 'a'), null, 'entries are per root');
  now = 1001;
  t.equal(cache.get('/root', 'a'), null, 'past its time the file is read again');
  cache.record('/root', { ok: true, path: 'c', sha256: sha('x'), size: 1, mtimeMs: 0, leaked: false });
  t.equal(
    cache.get('/root', 'c'),
    null,
    'a digest hashed without a settled identity is not kept, nor the old one',
  );
});
