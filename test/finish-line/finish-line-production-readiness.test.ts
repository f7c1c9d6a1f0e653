import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { PRODUCTION_LAYERS } from '../../src/contract/artifacts/index.js';
import { buildFixture, expectRule } from '../helpers/finish-line-fixture.js';

const plain = { commissioned: false, corrective: false };
const PATH = 'production/layer-assessment.json';

t.test('known-good v2 assessment passes', async (t) => {
  const f = await buildFixture(t, plain);
  t.same(await f.rule('production-readiness'), []);
});

const mutations: [string, (d: any) => void, string][] = [
  ['a missing layer', (d) => d.layers.pop(), 'does not assess layer availability-recovery-dr'],
  ['a duplicated layer', (d) => (d.layers[1].layer = 'frontend'), 'assesses layer frontend 2 times'],
  ['an unknown layer', (d) => (d.layers[0].layer = 'vibes'), 'does not validate'],
  ['a failed layer', (d) => (d.layers[3].status = 'failed'), 'is failed'],
  ['a pending layer', (d) => (d.layers[3].status = 'pending'), 'is pending'],
  [
    'not-applicable without reason',
    (d) => Object.assign(d.layers[0], { applicability: 'not-applicable', status: 'not-applicable' }),
    'without a reason',
  ],
  [
    'not-applicable with a blank reason',
    (d) =>
      Object.assign(d.layers[0], {
        applicability: 'not-applicable',
        status: 'not-applicable',
        reason: ' \t ',
        controls: [],
      }),
    'without a reason',
  ],
  ['required without controls', (d) => (d.layers[2].controls = []), 'lists no controls'],
  ['waived without waiver id', (d) => (d.layers[2].status = 'waived'), 'without a waiverId'],
  ['other run', (d) => (d.runId = 'other'), 'is not this run'],
];
for (const [name, fn, fragment] of mutations) {
  t.test(`production-readiness: ${name} fails`, async (t) => {
    const f = await buildFixture(t, plain);
    await f.mutate(PATH, fn);
    await expectRule(t, f, 'production-readiness', fragment, false);
  });
}

t.test('production-readiness: not-applicable with a reason passes', async (t) => {
  const f = await buildFixture(t, plain);
  await f.mutate(PATH, (d) =>
    Object.assign(d.layers[0], {
      applicability: 'not-applicable',
      status: 'not-applicable',
      reason: 'no UI',
      controls: [],
    }),
  );
  t.same(await f.rule('production-readiness'), []);
});

const v1 = () => ({
  schema: 'harness.production-readiness.v1',
  layers: PRODUCTION_LAYERS.map((layer) => ({ layer, status: 'pass' })),
});

t.test('production-readiness: v1 history is readable on an ordinary run', async (t) => {
  const f = await buildFixture(t, plain);
  await f.write(PATH, v1());
  t.same(await f.rule('production-readiness'), []);
  const bad = v1();
  bad.layers.pop();
  await f.write(PATH, bad);
  await expectRule(t, f, 'production-readiness', 'does not assess layer', false);
});

t.test('production-readiness: a v1 layer that failed is refused on an ordinary run', async (t) => {
  const f = await buildFixture(t, plain);
  const doc = v1();
  doc.layers[0] = { layer: 'frontend', status: 'fail' };
  await f.write(PATH, doc);
  await expectRule(t, f, 'production-readiness', `${PATH} layer frontend failed`, false);
});

t.test('production-readiness: a not-applicable layer with a reason but status passed fails', async (t) => {
  const f = await buildFixture(t, plain);
  await f.mutate(PATH, (d) =>
    Object.assign(d.layers[0], { applicability: 'not-applicable', status: 'passed', reason: 'no UI' }),
  );
  await expectRule(
    t,
    f,
    'production-readiness',
    'layer frontend is not-applicable but has status passed',
    false,
  );
});

t.test('production-readiness: a required layer with status not-applicable fails', async (t) => {
  const f = await buildFixture(t, plain);
  await f.mutate(PATH, (d) => (d.layers[0].status = 'not-applicable'));
  await expectRule(
    t,
    f,
    'production-readiness',
    'layer frontend is required but has status not-applicable',
    false,
  );
});

t.test('production-readiness: commissioned runs need v2', async (t) => {
  const f = await buildFixture(t, { commissioned: true, corrective: false });
  await f.write(PATH, v1());
  await expectRule(
    t,
    f,
    'production-readiness',
    'commissioned runs need harness.production-readiness.v2',
    false,
  );
});

t.test(
  'production-readiness: a missing assessment of a required node fails; a skipped node does not',
  async (t) => {
    const f = await buildFixture(t, plain);
    await unlink(join(f.root, PATH));
    await expectRule(t, f, 'production-readiness', 'is missing', false);
    f.facts.state.nodes['production-readiness'] = {
      state: 'skipped',
      seq: 3,
      skipReason: 'library',
      failureReason: null,
      recoveryPath: null,
    };
    t.same(await f.rule('production-readiness'), []);
  },
);
