import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { DOCUMENT_MAX_BYTES } from '../src/contract/index.js';
import { buildFixture, expectRule } from './helpers/finish-line-fixture.js';

t.test('known-good review passes', async (t) => {
  const f = await buildFixture(t);
  t.same(await f.rule('review'), []);
});

for (const field of ['actorId', 'sessionId', 'executionId'] as const) {
  t.test(`review: collapsed ${field} between implementer and verifier is refused`, async (t) => {
    const f = await buildFixture(t);
    f.roster.verifier[field] = f.roster.implementer[field];
    await f.resign();
    await f.repack();
    await expectRule(t, f, 'review', `collapsed role identity: implementer and verifier share ${field}`);
  });
}

t.test('review: the scout and the reviewer may not be one actor either', async (t) => {
  const f = await buildFixture(t);
  f.roster.scout.actorId = 'reviewer-actor';
  await f.resign();
  await f.repack();
  await expectRule(t, f, 'review', 'share actorId');
});

const mutations: [string, (d: any) => void, string][] = [
  [
    'a review carrying its own public key',
    (d) => (d.signature.publicKeyPem = '-----BEGIN PUBLIC KEY-----x'),
    'self-declared reviewer trust',
  ],
  ['a review carrying a trust store', (d) => (d.trust = { keys: [] }), 'self-declared reviewer trust'],
  ['a missing role', (d) => delete d.roster.verifier, 'does not validate as harness.review.v2'],
  ['a fifth role', (d) => (d.roster.observer = d.roster.scout), 'does not validate'],
  ['another run', (d) => (d.runId = 'other'), 'runId other is not this run'],
  ['changes requested', (d) => (d.verdict = 'changes-requested'), 'verdict is changes-requested'],
  [
    'scout evidence not binding the route',
    (d) => (d.roster.scout.evidence = []),
    'the scout evidence does not bind run/route.json',
  ],
  [
    'verifier evidence not binding the proof',
    (d) => (d.roster.verifier.evidence = []),
    'the verifier evidence does not bind proof/proof.json',
  ],
  [
    'stale evidence hash',
    (d) => (d.roster.implementer.evidence[0].sha256 = '0'.repeat(64)),
    'unsigned evidence change',
  ],
];
for (const [name, fn, fragment] of mutations) {
  t.test(`review: ${name} fails`, async (t) => {
    const f = await buildFixture(t);
    await f.mutate('review/review.json', fn);
    await expectRule(t, f, 'review', fragment, false);
  });
}

t.test('review: a missing review fails a commissioned run', async (t) => {
  const f = await buildFixture(t);
  await f.write('review/review.json', 'not json at all');
  await expectRule(t, f, 'review', 'does not validate', false);
});

t.test('a review padded past the document size limit is refused unread (issue 29 item 5)', async (t) => {
  const f = await buildFixture(t);
  const review = JSON.stringify(await f.read('review/review.json'));
  await writeFile(join(f.root, 'review/review.json'), review.padEnd(DOCUMENT_MAX_BYTES + 1, ' '));
  await expectRule(t, f, 'review', `review/review.json is larger than ${DOCUMENT_MAX_BYTES} bytes`, false);
});
