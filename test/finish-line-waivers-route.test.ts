import t from 'tap';
import type { ApprovalRecord } from '../src/contract/index.js';
import { buildFixture, expectRule } from './helpers/finish-line-fixture.js';

const approval = (status: ApprovalRecord['status']): ApprovalRecord => ({
  nodeId: 'production-readiness',
  owner: 'cto',
  scope: 'rate-limiting later',
  status,
  requestedSeq: 5,
  requestedAt: '2025-01-01T00:00:00Z',
  decidedSeq: status === 'pending' ? null : 6,
  decidedAt: status === 'pending' ? null : '2025-01-01T00:00:01Z',
});
const waiver = {
  waiverId: 'w-rate',
  status: 'active',
  reason: 'launch behind a gateway',
  approval: { nodeId: 'production-readiness', owner: 'cto', scope: 'rate-limiting later' },
};

async function waivedFixture(t: any) {
  const f = await buildFixture(t);
  await f.mutate('production/layer-assessment.json', (d) => {
    const layer = d.layers.find((l: any) => l.layer === 'rate-limiting');
    layer.status = 'waived';
    layer.waiverId = 'w-rate';
  });
  await f.resign();
  await f.repack((p) => p.waivers.push(waiver));
  return f;
}

t.test('waivers: an active waiver tied to a human-granted approval passes', async (t) => {
  const f = await waivedFixture(t);
  f.facts.state.approvals.push(approval('granted'));
  t.same((await f.run()).problems, []);
});

for (const status of ['pending', 'denied'] as const) {
  t.test(`waivers: an approval that is ${status} does not back a waiver`, async (t) => {
    const f = await waivedFixture(t);
    f.facts.state.approvals.push(approval(status));
    await expectRule(t, f, 'waivers', 'not tied to a human-granted approval', false);
  });
}

for (const [field, value] of [
  ['owner', 'cfo'],
  ['scope', 'everything later'],
] as const) {
  t.test(`waivers: a granted approval with another ${field} does not back a waiver`, async (t) => {
    const f = await waivedFixture(t);
    f.facts.state.approvals.push({ ...approval('granted'), [field]: value });
    await expectRule(
      t,
      f,
      'waivers',
      'waiver w-rate is not tied to a human-granted approval (production-readiness, cto, rate-limiting later)',
    );
  });
}

t.test('waivers: the same active waiverId listed twice fails', async (t) => {
  const f = await waivedFixture(t);
  f.facts.state.approvals.push(approval('granted'));
  await f.repack((p) => p.waivers.push(waiver, { ...waiver }));
  await expectRule(t, f, 'waivers', 'waiver w-rate is listed twice');
});

t.test('waivers: a waiver with no approval at all fails', async (t) => {
  const f = await waivedFixture(t);
  await expectRule(t, f, 'waivers', 'w-rate is not tied to a human-granted approval');
});

t.test('waivers: a waived layer without an active packet waiver fails', async (t) => {
  const f = await waivedFixture(t);
  f.facts.state.approvals.push(approval('granted'));
  await f.repack((p) => p.waivers.push({ ...waiver, status: 'expired' }));
  await expectRule(t, f, 'waivers', 'layer rate-limiting is waived');
});

t.test('route-binding: known-good route passes', async (t) => {
  const f = await buildFixture(t);
  t.same(await f.rule('route-binding'), []);
});

const routeMutations: [string, (d: any) => void, string][] = [
  ['route bound to another run', (d) => (d.runId = 'other-run'), 'is bound to run other-run'],
  ['goal bound to another run', (d) => (d.goal.runId = 'other-run'), 'goal goal-1 is bound to run other-run'],
  ['route without a goal', (d) => delete d.goal, 'does not validate as harness.route.v1'],
];
for (const [name, fn, fragment] of routeMutations) {
  t.test(`route-binding: ${name} fails`, async (t) => {
    const f = await buildFixture(t);
    await f.mutate('run/route.json', fn);
    await expectRule(t, f, 'route-binding', fragment, false);
  });
}
