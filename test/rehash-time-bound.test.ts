import { truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { cleanup, ev, makeTestEnv, startTestBridge } from './helpers/bridge.js';
import { complete, driveToReady } from './helpers/complete-run.js';
import { expectRejected } from './helpers/expect.js';

/**
 * Issue 28 item 7: hashing one file in the pool may take HARNESS_REHASH_TIMEOUT_MS. Past it the
 * hash is abandoned: a claim is refused, and a completed run's read does not answer it complete
 * (SPEC: no stale complete state); like any file that cannot be re-verified, it quarantines the
 * run (docs/finish-line.md). 512 MiB cannot be hashed in 100 ms.
 */
const MiB = 1024 * 1024;
const timedOut = (path: string) => `${path} could not be hashed within 100 ms (HARNESS_REHASH_TIMEOUT_MS)`;

t.test('a hash past the time bound refuses a claim and does not leave a run complete', async (t) => {
  const te = await makeTestEnv();
  te.env['HARNESS_ARTIFACT_MAX_BYTES'] = String(1024 * MiB);
  const first = await startTestBridge(te);
  await driveToReady(first, 'slow');
  const handoff = join(te.artifactRoot, 'handoff/final.md');
  await truncate(handoff, 512 * MiB);
  const claim = ev({ type: 'artifact.written', nodeId: 'handoff', artifact: 'handoff/final.md' });
  t.equal((await first.req('POST', '/runs/slow/events', claim)).status, 201);
  t.equal((await complete(first, 'slow')).status, 201, 'completed within the default bound');
  await first.close();

  te.env['HARNESS_REHASH_TIMEOUT_MS'] = '100';
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  t.equal((await b.req('GET', '/health')).body['limits'].rehashTimeoutMs, 100);
  const read = await b.req('GET', '/runs/slow');
  t.equal(read.body['run'].status, 'quarantined', 'not answered complete');
  t.same(read.body['run'].quarantine.reasons, [`artifact handoff/final.md: ${timedOut('handoff/final.md')}`]);

  t.equal((await b.req('POST', '/runs/late/events', ev({ artifactRoot: te.artifactRoot }))).status, 201);
  await writeFile(join(te.artifactRoot, 'run/intake.json'), '');
  await truncate(join(te.artifactRoot, 'run/intake.json'), 512 * MiB);
  const refused = await expectRejected(
    t,
    b,
    'late',
    () => b.req('POST', '/runs/late/events', ev({ type: 'artifact.written', artifact: 'run/intake.json' })),
    400,
    'artifact_verification_failed',
  );
  t.equal(refused.body['message'], timedOut('run/intake.json'));
});
