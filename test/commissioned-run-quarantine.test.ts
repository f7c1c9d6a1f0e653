import { appendFile, readFile, writeFile } from 'node:fs/promises';
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
 * Issue 3 item 6, continued (test/commissioned-run-e2e.test.ts has the byte drift): a completed
 * commissioned run is quarantined when its sealed adapter changes or an artifact it references
 * gains a bridge credential value. One run per drift, so each reason is seen on its own.
 */
t.test('changing the adapter after completion quarantines the run', async (t) => {
  const c = await commissionedRun(t);
  await completed(t, c);
  await appendFile(join(c.f.root, 'project-adapter.json'), ' ');
  await expectQuarantined(t, c, /^adapter changed since the run sealed it$/);
});

t.test('a credential value written into an artifact quarantines the run', async (t) => {
  const c = await commissionedRun(t);
  await completed(t, c);
  const token = c.b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!;
  await c.f.mutate('rca/rca.json', (rca) => {
    rca.rootCause.evidence.push(`log line ${token}`);
  });
  const body = await expectQuarantined(t, c, /^artifact rca\/rca\.json contains a bridge credential value$/);
  t.notMatch(JSON.stringify(body), token, 'the credential is never echoed');
});

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

t.test('a tracked application file edited after a cached read is not answered from the cache', async (t) => {
  const c = await commissionedRun(t);
  const before = await cachedRead(t, c);
  await appendFile(join(c.f.repo, 'app.js'), '// edited after the proof\n');
  await expectQuarantined(
    t,
    c,
    /^post-proof-mutation: application changed after proof at [0-9a-f]+: app\.js$/,
  );
  const after = (await c.b.req('GET', '/health')).body.cache;
  t.equal(after.executions, before.executions + 1, 'the read after the edit ran the validators');
});
