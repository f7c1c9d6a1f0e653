import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { claimArtifact } from '../src/validators/artifact-root.js';
import { runFinishLine } from '../src/validators/finish-line.js';
import { changedWhileChecked } from '../src/validators/verified-bytes.js';
import { assuranceFor, buildFixture, expectRule } from './helpers/finish-line-fixture.js';

t.test('known-good v3 packet passes', async (t) => {
  const f = await buildFixture(t);
  t.same(await f.rule('run-packet'), []);
});

t.test('run-packet: v2 never completes', async (t) => {
  const f = await buildFixture(t, { commissioned: true, corrective: false });
  await f.write('run/packet.json', { schema: 'harness.run-packet.v2', runId: f.runId });
  await expectRule(t, f, 'run-packet', 'historical evidence only');
});

t.test('run-packet: missing packet fails a commissioned run', async (t) => {
  const f = await buildFixture(t, { commissioned: true, corrective: false });
  await unlink(join(f.root, 'run/packet.json'));
  await expectRule(t, f, 'run-packet', 'run/packet.json is missing');
});

const mutations: [string, (p: any) => void, string][] = [
  [
    'roles differing from the signed roster',
    (p) => (p.roles.scout.actorId = 'someone'),
    'role provenance differs',
  ],
  ['a stale review hash', (p) => (p.review.sha256 = '0'.repeat(64)), 'binds an earlier review'],
  ['another review path', (p) => (p.review.path = 'review/other.json'), 'not review/review.json'],
  [
    'a stale route hash',
    (p) => (p.route.artifact.sha256 = '0'.repeat(64)),
    'binds an earlier route (run/route.json changed)',
  ],
  ['another routeId', (p) => (p.route.routeId = 'route-9'), 'names another routeId'],
  ['another goalId', (p) => (p.route.goalId = 'goal-9'), 'names another goalId'],
  ['another run', (p) => (p.runId = 'other'), 'runId other is not this run'],
  ['a catalog resolved twice', (p) => p.catalogs.push(p.catalogs[0]), 'resolves catalog layers twice'],
  [
    'a semantic claim without assurance',
    (p) =>
      Object.assign(p, {
        assuranceLevel: 'semantic',
        claims: [{ id: 'c2', kind: 'semantic', statement: 's' }],
      }),
    'need the authoritative-assurance artifact',
  ],
  [
    'an authoritative level with only structural claims and no assurance',
    (p) => (p.assuranceLevel = 'authoritative'),
    'need the authoritative-assurance artifact',
  ],
  [
    'a claim above the packet level',
    (p) => p.claims.push({ id: 'c3', kind: 'authoritative', statement: 's' }),
    'assurance level is structural',
  ],
  [
    'an embedded public key',
    (p) => (p.publicKeyPem = '-----BEGIN PUBLIC KEY-----'),
    'self-declared reviewer trust',
  ],
  [
    'a PEM block in a field of any name',
    (p) => (p.claims[0].statement = '-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----'),
    'self-declared reviewer trust',
  ],
  ['an unknown field', (p) => (p.extra = 1), 'does not validate as harness.run-packet.v3'],
];
for (const [name, fn, fragment] of mutations) {
  t.test(`run-packet: ${name} fails`, async (t) => {
    const f = await buildFixture(t);
    await f.repack(fn);
    await expectRule(t, f, 'run-packet', fragment, false);
  });
}

t.test('run-packet: semantic claims pass with a covering authoritative-assurance artifact', async (t) => {
  const f = await buildFixture(t);
  await f.write('assurance/authoritative.json', assuranceFor(f.runId, 'semantic'));
  await f.resign();
  const ref = {
    path: 'assurance/authoritative.json',
    sha256: (await claimArtifact(f.root, 'assurance/authoritative.json')).sha256,
  };
  const semantic = (p: any) =>
    Object.assign(p, {
      assuranceLevel: 'semantic',
      authoritativeAssurance: ref,
      claims: [{ id: 'c2', kind: 'semantic', statement: 's' }],
    });
  await f.repack(semantic);
  t.same((await f.run()).problems, []);
  // Read once, and only at the bytes the bridge verified there (FinishLineEnv.verified).
  const unverified = await runFinishLine(f.facts, { ...f.env, verified: { [ref.path]: 'f'.repeat(64) } });
  t.same(unverified.rules.find((r) => r.name === 'run-packet')?.problems, [
    `run-packet: authoritative assurance: ${changedWhileChecked(ref.path)}`,
  ]);
  await f.repack((p) => {
    semantic(p);
    p.claims.push({ id: 'c4', kind: 'semantic', statement: 'uncovered' });
  });
  await expectRule(t, f, 'run-packet', 'claim c4 is not covered');
  await f.repack((p) => {
    semantic(p);
    p.authoritativeAssurance = { ...ref, sha256: '0'.repeat(64) };
  });
  await expectRule(t, f, 'run-packet', 'changed after packing');
});

async function assuredFixture(t: any, assurance: Record<string, unknown>) {
  const f = await buildFixture(t);
  await f.write('assurance/authoritative.json', { ...assuranceFor(f.runId, 'authoritative'), ...assurance });
  await f.resign();
  const sha256 = (await claimArtifact(f.root, 'assurance/authoritative.json')).sha256;
  await f.repack((p) =>
    Object.assign(p, {
      assuranceLevel: 'authoritative',
      authoritativeAssurance: { path: 'assurance/authoritative.json', sha256 },
      claims: [{ id: 'c2', kind: 'authoritative', statement: 's' }],
    }),
  );
  return f;
}

t.test('run-packet: an authoritative packet passes with a matching assurance artifact', async (t) => {
  const f = await assuredFixture(t, {});
  t.same(await f.rule('run-packet'), []);
});

t.test('run-packet: an assurance artifact bound to another run fails', async (t) => {
  const f = await assuredFixture(t, { runId: 'other' });
  await expectRule(t, f, 'run-packet', 'assurance/authoritative.json is not bound to this run', false);
});

t.test('run-packet: an assurance level below the packet level fails', async (t) => {
  const f = await assuredFixture(t, { level: 'semantic' });
  await expectRule(
    t,
    f,
    'run-packet',
    'authoritative assurance level semantic is below authoritative',
    false,
  );
});
