import { generateKeyPairSync } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { execa } from '#execa';
import { loadTrustStore } from '../../src/validators/trust-store.js';
import { expectRefused, runCli } from '../helpers/cli.js';
import { buildFixture, type Fixture } from '../helpers/finish-line-fixture.js';

/**
 * Issue 29 item 1: `harness review enroll` adds a reviewer key to the committed trust store's path,
 * prints the git commands and the pin; once those commands ran, the gate's own loader accepts the
 * store under that pin. A store the gate would refuse is not written (exit 2, one line).
 */
const STORE = 'controls/review-trust.v1.json';

async function enroll(f: Fixture, keyFile: string, keyId: string, allow: string[]) {
  const env = { PATH: process.env['PATH'] ?? '', HOME: join(f.repo, '..'), HARNESS_REPO_ROOT: f.repo };
  return runCli(['review', 'enroll', '--key-id', keyId, '--public-key', keyFile, '--allow', ...allow], env);
}

async function keyFile(f: Fixture, type: 'ed25519' | 'ec'): Promise<string> {
  const { publicKey } =
    type === 'ed25519' ? generateKeyPairSync('ed25519') : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const file = join(f.repo, '..', `${type}.pub.pem`);
  await writeFile(file, publicKey.export({ type: 'spki', format: 'pem' }));
  return file;
}

t.test('the printed commands commit a store the gate loads under the printed pin', async (t) => {
  const f = await buildFixture(t);
  const r = await enroll(f, await keyFile(f, 'ed25519'), 'alice-key', ['alice', 'alice-ci']);
  t.equal(r.exitCode, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  t.equal(lines.length, 3, r.stdout);
  const pin = /^HARNESS_REVIEW_TRUST_SHA256=([0-9a-f]{64})$/.exec(lines[2]!)?.[1] ?? '';
  t.equal((await loadTrustStore(f.repo, pin)).ok, false, 'not committed yet: the gate reads HEAD');
  for (const line of lines.slice(0, 2)) await execa('sh', ['-c', line], { cwd: f.repo });
  const loaded = await loadTrustStore(f.repo, pin);
  t.ok(loaded.ok, loaded.ok ? 'the gate loads it' : loaded.problems.join('; '));
  if (!loaded.ok) return;
  t.same([...loaded.store.keys.keys()], [f.keyId, 'alice-key'], 'the existing key is kept');
  t.same([...loaded.store.keys.get('alice-key')!.allowedActorIds], ['alice', 'alice-ci']);
  t.equal(loaded.store.keys.get('alice-key')!.status, 'active');
});

async function refused(t: Test, f: Fixture, args: [string, string, string[]], fragment: string) {
  const before = await readFile(join(f.repo, STORE));
  expectRefused(t, await enroll(f, ...args), fragment);
  t.same(await readFile(join(f.repo, STORE)), before, 'the store is unchanged');
}

t.test('a store the gate would refuse is not written', async (t) => {
  const f = await buildFixture(t);
  const ed = await keyFile(f, 'ed25519');
  await refused(t, f, [ed, f.keyId, ['alice']], `lists key ${f.keyId} twice`);
  await refused(t, f, [await keyFile(f, 'ec'), 'p256', ['alice']], 'is not an Ed25519 public key');
  await refused(t, f, [ed, 'alice-key', ['not an id']], 'does not validate as harness.review-trust.v1');
  await refused(t, f, [ed, 'bad key id', ['alice']], 'does not validate as harness.review-trust.v1');
});
