import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import {
  type CommissionedRun,
  commissionedRun,
  completed,
  expectQuarantined,
} from './helpers/commissioned-run.js';
import { writeArtifact } from './helpers/expect.js';

/**
 * A completed commissioned run read once (its verdict cached) and then changed in a way only the
 * cache key can see: the next read must not be answered from the cache. (Split from
 * test/commissioned-run-quarantine.test.ts: each completion takes tens of seconds on a slow host.)
 * Work in the repository after completion is no such change: test/completed-run-further-work.test.ts.
 */
t.test('a file added to the artifact root after a cached read is not answered from the cache', async (t) => {
  const c = await commissionedRun(t);
  await completed(t, c);
  t.equal((await c.b.req('GET', `/runs/${c.f.runId}`)).body.run.status, 'completed', 'a cached re-read');
  const before = (await c.b.req('GET', '/health')).body.cache;
  t.ok(before.hits >= 1, `the verdict cache was hit: ${JSON.stringify(before)}`);
  await writeArtifact(c.f.root, 'notes/x.md', 'added after completion\n');
  await expectQuarantined(t, c, /^review-signature: unsigned evidence change: /);
  const after = (await c.b.req('GET', '/health')).body.cache;
  t.equal(after.executions, before.executions + 1, 'the read after the addition was a cache miss');
});

/** A completed run read twice (the second answered from the verdict cache), and the cache counts. */
async function cachedRead(t: Test, c: CommissionedRun) {
  await completed(t, c);
  t.equal((await c.b.req('GET', `/runs/${c.f.runId}`)).body.run.status, 'completed', 'a cached re-read');
  const before = (await c.b.req('GET', '/health')).body.cache;
  t.ok(before.hits >= 1, `the verdict cache was hit: ${JSON.stringify(before)}`);
  return before;
}

t.test('a commit revoking the reviewer key after a cached read is not answered from the cache', async (t) => {
  const c = await commissionedRun(t);
  const before = await cachedRead(t, c);
  // The trust store is read at HEAD: a committed revocation is what the uncached rule sees.
  const store = join(c.f.repo, 'controls/review-trust.v1.json');
  const doc = JSON.parse(await readFile(store, 'utf8'));
  doc.keys[0].status = 'revoked';
  await writeFile(store, `${JSON.stringify(doc, null, 2)}\n`);
  await c.f.git('commit', '-q', '-am', 'revoke the reviewer key');
  await expectQuarantined(t, c, /^review-signature: /);
  const after = (await c.b.req('GET', '/health')).body.cache;
  t.equal(after.executions, before.executions + 1, 'the read after the commit ran the validators');
});

t.test('a root whose inventory cannot be taken is never answered from the cache', async (t) => {
  const c = await commissionedRun(t);
  await completed(t, c);
  // As for a root too large to walk: the verdict has no inputs digest, so no cache key.
  c.b.ctx.pool.statInventory = async () => null;
  t.equal((await c.b.req('GET', `/runs/${c.f.runId}`)).body.run.status, 'completed', 'an uncached read');
  const before = (await c.b.req('GET', '/health')).body.cache;
  await writeArtifact(c.f.root, 'notes/x.md', 'added after completion\n');
  await expectQuarantined(t, c, /^review-signature: unsigned evidence change: /);
  const after = (await c.b.req('GET', '/health')).body.cache;
  t.same(after, { executions: before.executions + 1, hits: before.hits }, 'the read ran the validators');
});
