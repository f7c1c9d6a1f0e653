import { truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { ARTIFACT_MAX_BYTES } from '../../src/contract/index.js';
import { buildInventory } from '../../src/validators/inventory.js';
import { createFinishLineGate } from '../../src/validators/runner.js';
import { verifiedDigest } from '../../src/validators/verified-bytes.js';
import { HashPool } from '../../src/workers/pool.js';
import { cleanup, ev, makeTestEnv, startTestBridge } from '../helpers/bridge.js';
import { complete, driveToReady, expectBlocked } from '../helpers/complete-run.js';
import { expectRejected, timed, writeArtifact } from '../helpers/expect.js';
import { buildFixture } from '../helpers/finish-line-fixture.js';

/**
 * Issue 28 item 7: an artifact has a size ceiling (HARNESS_ARTIFACT_MAX_BYTES, 256 MiB by
 * default), found by the size of the opened descriptor before a byte is read. A sparse file of
 * many GiB uses no disk but takes as long to hash as a full one: without the ceiling it kept the
 * hash threads busy for tens of seconds at every claim and every read of its run.
 */
const GiB = 1024 ** 3;
const HUGE = 4 * GiB;
const over = (path: string, size: number, max: number = ARTIFACT_MAX_BYTES.default) =>
  `${path} is ${size} bytes, over the artifact ceiling of ${max} bytes (HARNESS_ARTIFACT_MAX_BYTES)`;

t.test(
  'a sparse multi-GiB artifact is refused at claim time; other runs and GET /runs are not held up',
  async (t) => {
    const b = await startTestBridge();
    t.teardown(() => cleanup(b));
    const root = b.t.artifactRoot;
    t.equal((await b.req('POST', '/runs/big/events', ev({ artifactRoot: root }))).status, 201);
    t.equal((await b.req('POST', '/runs/other/events', ev({ artifactRoot: root }))).status, 201);
    await writeArtifact(root, 'run/intake.json', '');
    await truncate(join(root, 'run/intake.json'), HUGE);
    // 1 MiB: hashed in the pool, not inline (claimed once first, so a pool thread has started).
    await writeArtifact(root, 'run/route.json', Buffer.alloc(1024 * 1024, 'r'));
    const route = () => ev({ type: 'artifact.written', nodeId: 'route', artifact: 'run/route.json' });
    t.equal((await b.req('POST', '/runs/other/events', route())).status, 201);

    const huge = expectRejected(
      t,
      b,
      'big',
      () => b.req('POST', '/runs/big/events', ev({ type: 'artifact.written', artifact: 'run/intake.json' })),
      400,
      'artifact_verification_failed',
    );
    const [refused, other, list] = await Promise.all([
      timed(() => huge),
      timed(() => b.req('POST', '/runs/other/events', route())),
      timed(() => b.req('GET', '/runs')),
    ]);
    t.equal(refused.res.body['message'], over('run/intake.json', HUGE), 'the size and the ceiling are named');
    t.equal(other.res.status, 201, 'the other run records its artifact');
    t.equal(list.res.status, 200);
    // Refused by its size: nothing read, so no answer waits for 4 GiB to be hashed (seconds even on
    // a fast machine, and tens of them on a loaded one).
    for (const [what, { ms }] of Object.entries({ refused, other, list }))
      t.ok(ms < 3000, `${what}: ${ms} ms`);
    const health = await b.req('GET', '/health');
    t.equal(health.body['limits'].artifactMaxBytes, ARTIFACT_MAX_BYTES.default);
  },
);

t.test('a completed run whose artifact grows past the ceiling is quarantined unread', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'done');
  t.equal((await complete(b, 'done')).status, 201);
  // The same file (same inode), made a sparse 4 GiB: re-hashing it would take seconds per read.
  await truncate(join(b.t.artifactRoot, 'handoff/final.md'), HUGE);
  const read = await timed(() => b.req('GET', '/runs/done'));
  t.equal(read.res.body['run'].status, 'quarantined');
  t.same(read.res.body['run'].quarantine.reasons, [
    `artifact handoff/final.md: ${over('handoff/final.md', HUGE)}`,
  ]);
  t.ok(read.ms < 3000, `the read that found it took ${read.ms} ms`);
  const list = await timed(() => b.req('GET', '/runs'));
  t.equal(list.res.body['runs'][0].status, 'quarantined', 'the listing agrees');
  t.ok(list.ms < 1000, `GET /runs: ${list.ms} ms`);
  const again = await timed(() => b.req('GET', '/runs/done'));
  t.equal(again.res.body['run'].status, 'quarantined');
  t.ok(again.ms < 1000, `a later read hashes nothing: ${again.ms} ms`);
});

t.test('a completion whose claimed artifact grew past the ceiling is refused', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'grown');
  await truncate(join(b.t.artifactRoot, 'qa/break-it-results.md'), HUGE);
  const { r } = await expectBlocked(t, b, 'grown', 1);
  t.same(r.body['problems'], [
    `artifact qa/break-it-results.md cannot be re-verified: ${over('qa/break-it-results.md', HUGE)}`,
  ]);
});

t.test('the ceiling is configurable: HARNESS_ARTIFACT_MAX_BYTES', async (t) => {
  const te = await makeTestEnv();
  te.env['HARNESS_ARTIFACT_MAX_BYTES'] = String(1024 * 1024);
  const small = await startTestBridge(te);
  t.teardown(() => cleanup(small));
  const root = small.t.artifactRoot;
  t.equal((await small.req('POST', '/runs/r/events', ev({ artifactRoot: root }))).status, 201);
  await writeArtifact(root, 'run/intake.json', Buffer.alloc(1024 * 1024 + 1));
  const r = await expectRejected(
    t,
    small,
    'r',
    () => small.req('POST', '/runs/r/events', ev({ type: 'artifact.written', artifact: 'run/intake.json' })),
    400,
    'artifact_verification_failed',
  );
  t.equal(r.body['message'], over('run/intake.json', 1024 * 1024 + 1, 1024 * 1024));
  await writeArtifact(root, 'run/intake.json', Buffer.alloc(1024 * 1024));
  const at = await small.req(
    'POST',
    '/runs/r/events',
    ev({ type: 'artifact.written', artifact: 'run/intake.json' }),
  );
  t.equal(at.status, 201, 'a file of exactly the ceiling is claimed');
});

t.test(
  'the validators hash within the same ceiling: the inventory and the files documents name',
  async (t) => {
    const f = await buildFixture(t);
    await writeFile(join(f.root, 'late.bin'), '');
    await truncate(join(f.root, 'late.bin'), 2 * 1024 * 1024);
    const max = 1024 * 1024;
    const pool = new HashPool(1, { maxBytes: max });
    t.teardown(() => pool.close());
    t.same((await buildInventory(f.root, pool)).problems, [
      `inventory: ${over('late.bin', 2 * 1024 * 1024, max)}`,
    ]);
    const digest = await verifiedDigest(f.root, 'late.bin', undefined, max);
    t.equal(digest instanceof Error ? digest.message : digest, over('late.bin', 2 * 1024 * 1024, max));
    // The bridge hands its ceiling to the validator child with each request.
    const gate = createFinishLineGate({ concurrency: 1, deadlineMs: 60_000 });
    const problems = await gate(f.facts, { ...f.env, artifactMaxBytes: max });
    t.ok(
      problems.includes(`review-signature: inventory: ${over('late.bin', 2 * 1024 * 1024, max)}`),
      JSON.stringify(problems),
    );
  },
);
