import t from 'tap';
import { buildFixture } from '../helpers/finish-line-fixture.js';

t.test('a commissioned corrective run with signed review and v3 packet passes every rule', async (t) => {
  const f = await buildFixture(t);
  const r = await f.run();
  t.same(r.problems, []);
  t.same(
    r.rules.map((x) => x.name),
    [
      'required-nodes',
      'required-artifacts',
      'approvals',
      'self-heal',
      'self-heal-proposal',
      'corrective-work',
      'proof',
      'production-readiness',
      'route-binding',
      'review',
      'review-signature',
      'run-packet',
      'waivers',
      'external-validation-runtime',
      'post-proof-mutation',
      'secret-scan',
    ],
  );
});

t.test('an ordinary feature run needs no review, packet or RCA', async (t) => {
  const f = await buildFixture(t, { commissioned: false, corrective: false });
  const r = await f.run();
  t.same(r.problems, []);
  t.notOk(r.rules.some((x) => x.name === 'review'));
});

t.test('a non-commissioned corrective run passes with RCA and packet', async (t) => {
  const f = await buildFixture(t, { commissioned: false, corrective: true });
  t.same((await f.run()).problems, []);
});
