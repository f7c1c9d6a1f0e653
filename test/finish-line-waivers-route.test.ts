import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { buildFixture, expectRule } from './helpers/finish-line-fixture.js';
import { approval, waivedFixture, waiver } from './helpers/waivers-fixture.js';

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
  ['nodeId', 'route'],
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

t.test('waivers: with approvals known in part, an approval not shown is not reported absent', async (t) => {
  const f = await waivedFixture(t);
  f.facts.approvalsPartial = true;
  t.same(await f.rule('waivers'), [], 'undecidable here: the bridge decides it');
  await f.repack((p) => p.waivers.push(waiver, { ...waiver }));
  await expectRule(t, f, 'waivers', 'waiver w-rate is listed twice');
  t.notMatch((await f.rule('waivers')).join('\n'), /not tied to a human-granted approval/);
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

t.test('route-binding: a missing route fails', async (t) => {
  const f = await buildFixture(t);
  await unlink(join(f.root, 'run/route.json'));
  await expectRule(t, f, 'route-binding', 'run/route.json is missing', false);
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
