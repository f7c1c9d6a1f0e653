import { symlink, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { DOCUMENT_MAX_BYTES } from '../../src/contract/index.js';
import { buildFixture, expectRule } from '../helpers/finish-line-fixture.js';

const plain = { commissioned: false, corrective: false };

t.test('known-good proof passes', async (t) => {
  const f = await buildFixture(t, plain);
  t.same(await f.rule('proof'), []);
});

const mutations: [string, (d: any) => void, string][] = [
  ['failed status', (d) => (d.status = 'failed'), 'status is failed'],
  ['non-zero exit', (d) => (d.commands[0].exitCode = 1), 'exited 1'],
  ['other run', (d) => (d.runId = 'another-run'), 'is not this run'],
  ['no commands', (d) => (d.commands = []), 'does not validate as harness.proof.v1'],
  ['wrong schema id', (d) => (d.schema = 'harness.proof.v0'), 'does not validate as harness.proof.v1'],
  ['unknown field', (d) => (d.trustMe = true), 'does not validate'],
  ['bad digest', (d) => (d.commands[0].outputDigest = 'abc'), 'does not validate'],
  ['completed before started', (d) => (d.commands[0].startedAt = '2030-01-01T00:00:00Z'), 'completed before'],
];
for (const [name, fn, fragment] of mutations) {
  t.test(`proof: ${name} fails`, async (t) => {
    const f = await buildFixture(t, plain);
    await f.mutate('proof/proof.json', fn);
    await expectRule(t, f, 'proof', fragment, false);
  });
}

t.test('proof: a valid proof padded past the document size limit is refused unread', async (t) => {
  const f = await buildFixture(t, plain);
  const proof = JSON.stringify(await f.read('proof/proof.json'));
  await writeFile(join(f.root, 'proof/proof.json'), proof.padEnd(DOCUMENT_MAX_BYTES + 1, ' '));
  await expectRule(t, f, 'proof', `proof/proof.json is larger than ${DOCUMENT_MAX_BYTES} bytes`, false);
});

t.test('proof: missing proof fails even when the prove node is skipped', async (t) => {
  const f = await buildFixture(t, plain);
  await unlink(join(f.root, 'proof/proof.json'));
  f.facts.state.nodes.prove = {
    state: 'skipped',
    seq: 2,
    skipReason: 'no time',
    failureReason: null,
    recoveryPath: null,
  };
  await expectRule(t, f, 'proof', 'proof/proof.json is missing');
});

t.test('proof: a symlinked proof is refused', async (t) => {
  const f = await buildFixture(t, plain);
  const real = join(f.root, 'proof/real.json');
  await f.write('proof/real.json', await f.read('proof/proof.json'));
  await unlink(join(f.root, 'proof/proof.json'));
  await symlink(real, join(f.root, 'proof/proof.json'));
  await expectRule(t, f, 'proof', 'symbolic link', false);
});

t.test('proof: a run without an artifact root cannot pass', async (t) => {
  const f = await buildFixture(t, plain);
  f.env.realRoot = null;
  await expectRule(t, f, 'proof', 'no artifact root', false);
});

t.test('proof: the configured (adapter) path is the one checked', async (t) => {
  const f = await buildFixture(t, plain);
  f.facts.config.artifactByNode.prove = 'proof/other.json';
  await expectRule(t, f, 'proof', 'proof/other.json is missing', false);
});
