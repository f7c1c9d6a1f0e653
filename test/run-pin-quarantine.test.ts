import t from 'tap';
import { cleanup, ev, makeTestEnv, makeTrustRepo, startTestBridge, type TestEnv } from './helpers/bridge.js';
import { expectRejected } from './helpers/expect.js';

/**
 * docs/architecture.md "Decisions where the specification is silent": each run's sealed
 * run-config.json records the review-trust pin the bridge had when the run was created. A run
 * whose sealed pin differs from the bridge's pin is quarantined (not a startup failure): reads
 * answer it as quarantined with the reason, writes to it are 409 run_quarantined and store
 * nothing, and new runs on the new bridge work.
 */

t.test('a run sealed under another trust pin is quarantined after restart; new runs work', async (t) => {
  const te = await makeTestEnv();
  const oldPin = te.env['HARNESS_REVIEW_TRUST_SHA256']!;

  // A run with one event, created under the original pin.
  const first = await startTestBridge(te);
  t.equal((await first.req('POST', '/runs', { id: 'sealed-old', title: 'old pin' })).status, 201);
  t.equal((await first.req('POST', '/runs/sealed-old/events', ev({ id: 'old-0' }))).status, 201);
  await first.close();

  // The trust store changes and is committed: the bridge restarts with the new, valid pin.
  const newPin = await makeTrustRepo(te.repo, {
    schema: 'harness.review-trust.v1',
    description: 'rotated after the run was created',
    keys: [],
  });
  t.not(newPin, oldPin, 'the committed trust store change moves the pin');
  const te2: TestEnv = { ...te, env: { ...te.env, HARNESS_REVIEW_TRUST_SHA256: newPin } };
  const b = await startTestBridge(te2);
  t.teardown(() => cleanup(b));

  // The old run is answered as quarantined, with a reason naming the trust pin.
  const got = await b.req('GET', '/runs/sealed-old');
  t.equal(got.status, 200, JSON.stringify(got.body).slice(0, 300));
  t.equal(got.body['run']?.status, 'quarantined', 'the old run is quarantined');
  const reasons: unknown = got.body['run']?.quarantine?.reasons;
  t.ok(
    Array.isArray(reasons) && reasons.some((r) => typeof r === 'string' && /trust pin/i.test(r)),
    `the reason names the trust pin: ${JSON.stringify(reasons)}`,
  );
  const list = await b.req('GET', '/runs');
  const byId = Object.fromEntries((list.body['runs'] ?? []).map((s: any) => [s.id, s.status]));
  t.equal(byId['sealed-old'], 'quarantined', 'the listing agrees');

  // A write to the old run is refused and stores nothing (its journal still holds the old event).
  const journalBefore = await b.journal('sealed-old');
  t.ok(journalBefore.length > 0, 'the old run journal holds its event');
  await expectRejected(
    t,
    b,
    'sealed-old',
    () => b.req('POST', '/runs/sealed-old/events', ev({ id: 'old-1' })),
    409,
    'run_quarantined',
  );
  t.ok((await b.journal('sealed-old')).equals(journalBefore), 'the old run journal bytes are unchanged');

  // A new run on the new bridge works.
  t.equal((await b.req('POST', '/runs', { id: 'sealed-new', title: 'new pin' })).status, 201);
  t.equal((await b.req('POST', '/runs/sealed-new/events', ev({ id: 'new-0' }))).status, 201);
  const fresh = await b.req('GET', '/runs/sealed-new');
  t.equal(fresh.body['run']?.status, 'running', 'the new run is running');
});
