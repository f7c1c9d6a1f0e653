import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { buildFixture, expectRule } from './helpers/finish-line-fixture.js';

const plain = { commissioned: false, corrective: true };

t.test('known-good corrective chain passes with real commits', async (t) => {
  const f = await buildFixture(t, plain);
  t.same(await f.rule('corrective-work'), []);
});

const mutations: [string, (d: any, f: any) => void, string][] = [
  ['narrative RCA', (d) => (d.rootCause = 'it was a typo somewhere'), 'narrative RCA'],
  ['suspected root cause', (d) => (d.status = 'suspected'), 'not confirmed'],
  ['untyped category', (d) => (d.rootCause.category = 'vibes'), 'does not validate as harness.rca.v1'],
  ['other run', (d) => (d.runId = 'other'), 'rca.runId other'],
  ['phase of other run', (d) => (d.postFix.runId = 'other'), 'postFix.runId other'],
  ['pre-fix phase of other run', (d) => (d.preFix.runId = 'other'), 'preFix.runId other is not this run'],
  ['pre-fix command differs', (d) => (d.preFix.command = 'npm test'), 'one bound regression command'],
  ['post-fix command differs', (d) => (d.postFix.command = 'npm test'), 'one bound regression command'],
  ['post-fix environment differs', (d) => (d.postFix.environmentId = 'mac'), 'bound environment'],
  [
    'pre-fix environment differs',
    (d) => (d.preFix.environmentId = 'mac'),
    'bound environment ci-linux-node20',
  ],
  ['pre-fix passed', (d) => (d.preFix.exitCode = 0), 'code fix without regression proof'],
  ['post-fix failed', (d) => (d.postFix.exitCode = 2), 'post-fix phase exited 2'],
  ['same commit twice', (d) => (d.preFix.commit = d.postFix.commit), 'must be distinct'],
  ['unknown commit', (d) => (d.preFix.commit = 'f'.repeat(40)), 'does not exist in the repository'],
  ['abbreviated commit', (d) => (d.preFix.commit = d.preFix.commit.slice(0, 12)), 'does not validate'],
  ['option-looking commit', (d) => (d.preFix.commit = '--output=/tmp/x'), 'does not validate'],
  [
    'commits in reverse order',
    (d) => ([d.preFix.commit, d.postFix.commit] = [d.postFix.commit, d.preFix.commit]),
    'not an ancestor',
  ],
];
for (const [name, fn, fragment] of mutations) {
  t.test(`corrective-work: ${name} fails`, async (t) => {
    const f = await buildFixture(t, plain);
    await f.mutate('rca/rca.json', (d) => fn(d, f));
    await expectRule(t, f, 'corrective-work', fragment);
  });
}

t.test(
  'corrective-work: a bug route without rca/rca.json is a code fix without regression proof',
  async (t) => {
    const f = await buildFixture(t, plain);
    await unlink(join(f.root, 'rca/rca.json'));
    await expectRule(t, f, 'corrective-work', 'code fix without regression proof');
  },
);

t.test('corrective-work: a self_heal.detected on a feature route triggers the chain', async (t) => {
  const f = await buildFixture(t, { commissioned: false, corrective: false });
  t.same(await f.rule('corrective-work'), []);
  f.facts.state.selfHeal = {
    detectedSeq: 3,
    resolvedSeq: 4,
    resolution: { type: 'self_heal.pr_opened', prUrl: 'https://git.example/o/r/pull/1', artifact: null },
  };
  await expectRule(t, f, 'corrective-work', 'self_heal.detected was emitted');
});

t.test('corrective-work: a present rca/rca.json is checked on a feature route', async (t) => {
  const f = await buildFixture(t, plain);
  await f.mutate('run/route.json', (d) => (d.workType = 'feature'));
  await f.mutate('rca/rca.json', (d) => (d.postFix.exitCode = 1));
  await expectRule(t, f, 'corrective-work', 'post-fix phase exited 1');
});

t.test('corrective-work: an invalid route claiming bug still requires the chain', async (t) => {
  const f = await buildFixture(t, plain);
  await f.mutate('run/route.json', (d) => {
    d.extra = 1;
  });
  await unlink(join(f.root, 'rca/rca.json'));
  await expectRule(t, f, 'corrective-work', 'rca/rca.json is missing');
});

t.test('corrective-work: the packet must bind the post-fix commit', async (t) => {
  const f = await buildFixture(t, plain);
  await f.repack((p) => (p.subject.commit = f.preFix));
  await expectRule(t, f, 'corrective-work', 'does not name the post-fix commit');
});

t.test('corrective-work: a v2 packet cannot bind the post-fix commit', async (t) => {
  const f = await buildFixture(t, plain);
  await f.write('run/packet.json', { schema: 'harness.run-packet.v2', runId: f.runId, commit: f.postFix });
  await expectRule(t, f, 'corrective-work', 'cannot bind the post-fix commit');
});

t.test('corrective-work: a missing packet fails', async (t) => {
  const f = await buildFixture(t, plain);
  await unlink(join(f.root, 'run/packet.json'));
  await expectRule(t, f, 'corrective-work', 'run/packet.json is missing');
});

t.test('corrective-work: a post-fix commit that does not exist fails', async (t) => {
  const f = await buildFixture(t, plain);
  const ghost = 'e'.repeat(40);
  await f.mutate('rca/rca.json', (d) => (d.postFix.commit = ghost));
  await f.repack((p) => (p.subject.commit = ghost));
  await expectRule(t, f, 'corrective-work', `post-fix commit ${ghost} does not exist in the repository`);
});

t.test('corrective-work: a feature route with requiresRca needs rca/rca.json', async (t) => {
  const f = await buildFixture(t, plain);
  await f.mutate('run/route.json', (d) => {
    d.workType = 'feature';
    d.requiresRca = true;
  });
  await unlink(join(f.root, 'rca/rca.json'));
  await expectRule(t, f, 'corrective-work', 'the route is corrective but rca/rca.json is missing');
});

t.test(
  'corrective-work: a self-heal on a run without an artifact root needs the RCA it cannot have',
  async (t) => {
    const f = await buildFixture(t, { commissioned: false, corrective: false });
    f.env.realRoot = null;
    t.same(await f.rule('corrective-work'), [], 'nothing triggers the chain without a self-heal');
    f.facts.state.selfHeal = { detectedSeq: 3, resolvedSeq: 4, resolution: null };
    t.same(await f.rule('corrective-work'), [
      'corrective-work: self-heal work needs rca/rca.json but the run has no artifact root',
    ]);
  },
);
