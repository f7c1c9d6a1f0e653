import { execFileSync } from 'node:child_process';
import { createPrivateKey, generateKeyPairSync, sign } from 'node:crypto';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import {
  canonicalBytes,
  evidenceBundle,
  evidenceBundleDigest,
  reviewSigningBytes,
} from '../src/validators/evidence.js';
import { signEd25519, verifyEd25519 } from '../src/validators/signature.js';
import { trustPinOf } from '../src/validators/trust-store.js';
import { buildFixture, expectRule, type Fixture } from './helpers/finish-line-fixture.js';

t.test('a valid signature verifies (and a flipped byte does not)', async (t) => {
  const f = await buildFixture(t);
  const review = await f.read('review/review.json');
  const payload = reviewSigningBytes(review);
  t.same(verifyEd25519({ payload, signatureBase64: review.signature.value, publicKeyPem: f.publicKeyPem }), {
    ok: true,
  });
  const sig = Buffer.from(review.signature.value, 'base64');
  sig[0] = (sig[0] ?? 0) ^ 1;
  t.same(verifyEd25519({ payload, signatureBase64: sig.toString('base64'), publicKeyPem: f.publicKeyPem }), {
    ok: false,
  });
  const fresh = signEd25519(payload, f.privateKeyPem);
  t.same(verifyEd25519({ payload, signatureBase64: fresh, publicKeyPem: f.publicKeyPem }), { ok: true });
  t.same(await f.rule('review-signature'), []);
});

t.test('a non-Ed25519 key is an error, not a quiet "invalid"', async (t) => {
  const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 })
    .publicKey.export({ type: 'spki', format: 'pem' })
    .toString();
  const r = verifyEd25519({
    payload: Buffer.from('x'),
    signatureBase64: 'A'.repeat(86) + '==',
    publicKeyPem: rsa,
  });
  t.equal(r.ok, false);
  t.match(r, { error: /not ed25519/ });
});

async function commitStore(f: Fixture, mutate: (store: any) => void): Promise<void> {
  const store = JSON.parse(await f.git('show', 'HEAD:controls/review-trust.v1.json'));
  mutate(store);
  await writeFile(join(f.repo, 'controls/review-trust.v1.json'), JSON.stringify(store));
  await f.git('commit', '-q', '-am', 'trust store change');
  f.env.trustPin = trustPinOf(store);
}

t.test('review-signature: a flipped signature byte fails', async (t) => {
  const f = await buildFixture(t);
  await f.mutate('review/review.json', (d) => {
    const sig = Buffer.from(d.signature.value, 'base64');
    sig[10] = (sig[10] ?? 0) ^ 0x80;
    d.signature.value = sig.toString('base64');
  });
  await expectRule(t, f, 'review-signature', 'does not verify', false);
});

t.test('review-signature: an unknown key id is an error, never a fallback', async (t) => {
  const f = await buildFixture(t);
  await f.mutate('review/review.json', (d) => (d.signature.keyId = 'someone-else'));
  await expectRule(t, f, 'review-signature', 'signing key someone-else is not in the trust store', false);
});

t.test('review-signature: a key that is not enrolled (same id, other key) fails', async (t) => {
  const f = await buildFixture(t);
  f.privateKeyPem = generateKeyPairSync('ed25519')
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
  const { signReview } = await import('../src/cli/evidence-tools.js');
  await f.write(
    'review/review.json',
    await signReview({
      realRoot: f.root,
      runId: f.runId,
      roster: f.roster,
      artifactByNode: f.facts.config.artifactByNode,
      privateKeyPem: f.privateKeyPem,
      keyId: f.keyId,
    }),
  );
  await f.repack();
  await expectRule(t, f, 'review-signature', 'does not verify');
});

t.test('review-signature: a revoked key fails', async (t) => {
  const f = await buildFixture(t);
  await commitStore(f, (s) => (s.keys[0].status = 'revoked'));
  await expectRule(t, f, 'review-signature', 'is revoked', false);
});

t.test('review-signature: a key not allowed for the independent reviewer fails', async (t) => {
  const f = await buildFixture(t);
  await commitStore(f, (s) => (s.keys[0].allowedActorIds = ['scout-actor']));
  await expectRule(t, f, 'review-signature', 'not allowed for the independent reviewer', false);
});

t.test('review-signature: a pin that does not match the committed store fails', async (t) => {
  const f = await buildFixture(t);
  f.env.trustPin = 'a'.repeat(64);
  await expectRule(t, f, 'review-signature', 'does not match the sealed review-trust pin');
});

t.test('review-signature: an uncommitted working-copy trust store is ignored', async (t) => {
  const f = await buildFixture(t);
  const other = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const forged = {
    schema: 'harness.review-trust.v1',
    keys: [
      {
        keyId: 'reviewer-key-1',
        algorithm: 'ed25519',
        status: 'active',
        publicKeyPem: other,
        allowedActorIds: ['reviewer-actor'],
      },
    ],
  };
  await writeFile(join(f.repo, 'controls/review-trust.v1.json'), JSON.stringify(forged));
  f.env.trustPin = trustPinOf(forged);
  await expectRule(t, f, 'review-signature', 'does not match the sealed review-trust pin', false);
});

t.test('review-signature: a commissioned target reads only .harness-pack/controls', async (t) => {
  const f = await buildFixture(t);
  await mkdir(join(f.repo, '.harness-pack'));
  await expectRule(
    t,
    f,
    'review-signature',
    '.harness-pack/controls/review-trust.v1.json is not committed at HEAD',
    false,
  );
});

for (const [name, owner] of [
  ['an evidence file changed', 'someone-else'],
  ['an evidence file rewritten at the same size', 'team-b'],
]) {
  t.test(`review-signature: ${name} after signing is unsigned evidence change`, async (t) => {
    const f = await buildFixture(t);
    await f.mutate('production/layer-assessment.json', (d) => (d.layers[0].owner = owner));
    await expectRule(
      t,
      f,
      'review-signature',
      'unsigned evidence change: production/layer-assessment.json changed',
      false,
    );
  });
}

t.test('review-signature: an evidence file added after signing is unsigned evidence change', async (t) => {
  const f = await buildFixture(t);
  await f.write('notes/late.json', { late: true });
  await expectRule(t, f, 'review-signature', 'unsigned evidence change: notes/late.json was added');
});

t.test('review-signature: a FIFO in the artifact root is refused, never skipped', async (t) => {
  const f = await buildFixture(t);
  execFileSync('mkfifo', [join(f.root, 'notes-fifo')]);
  await expectRule(t, f, 'review-signature', 'inventory: notes-fifo is not a regular file');
});

t.test('review-signature: a symlink in the artifact root is refused', async (t) => {
  const f = await buildFixture(t);
  await symlink('/etc/hostname', join(f.root, 'notes-link'));
  await expectRule(t, f, 'review-signature', 'is a symbolic link', false);
});

t.test('review-signature: a bundle digest not matching the inventory fails', async (t) => {
  const f = await buildFixture(t);
  await f.mutate('review/review.json', (d) => (d.evidenceBundleDigest = `sha256:${'0'.repeat(64)}`));
  await expectRule(t, f, 'review-signature', 'evidence bundle digest does not match', false);
});

t.test('review-signature: the post-review handoff may change without re-signing', async (t) => {
  const f = await buildFixture(t);
  await f.write('handoff/final.md', 'updated after review');
  t.same(await f.rule('review-signature'), []);
});

/** Signs `review` in place with node:crypto directly over `bytes` (no harness signing tool). */
function signRaw(f: Fixture, review: any, bytes: Buffer): void {
  review.signature.value = sign(null, bytes, createPrivateKey(f.privateKeyPem)).toString('base64');
}

/** The review statement body the gate signs, without any domain prefix. */
function statementBody(review: any): Buffer {
  return canonicalBytes({
    schema: 'harness.review-statement.v1',
    runId: review.runId,
    verdict: review.verdict,
    evidenceBundleDigest: review.evidenceBundleDigest,
    inventory: review.inventory,
    roster: review.roster,
  });
}

t.test(
  'review-signature: the signature covers the roster (a roster edited after signing fails)',
  async (t) => {
    const f = await buildFixture(t);
    t.same(await f.rule('review-signature'), [], 'the fixture review verifies before the edit');
    await f.mutate('review/review.json', (d) => (d.roster.verifier.sessionId = 'verifier-session-forged'));
    // The packet's roles follow the edited roster, so only the signature can notice the change.
    await f.repack();
    t.equal((await f.read('run/packet.json')).roles.verifier.sessionId, 'verifier-session-forged');
    await expectRule(
      t,
      f,
      'review-signature',
      'the review signature does not verify with key reviewer-key-1',
    );
  },
);

t.test(
  'review-signature: the signed bytes carry the harness.review.v2.signature domain prefix',
  async (t) => {
    const f = await buildFixture(t);
    // Fixed vector: node:crypto over the literal prefix and the canonical statement verifies.
    await f.mutate('review/review.json', (d) =>
      signRaw(f, d, Buffer.concat([Buffer.from('harness.review.v2.signature\n', 'utf8'), statementBody(d)])),
    );
    await f.repack();
    t.same(await f.rule('review-signature'), [], 'a signature over the prefixed statement verifies');

    // The same statement signed without the prefix, or under another record's prefix, does not.
    for (const prefix of ['', 'harness.review.v1.signature\n', 'harness.inventory.v1\n']) {
      await f.mutate('review/review.json', (d) =>
        signRaw(f, d, Buffer.concat([Buffer.from(prefix, 'utf8'), statementBody(d)])),
      );
      await f.repack();
      await expectRule(
        t,
        f,
        'review-signature',
        'the review signature does not verify with key reviewer-key-1',
      );
    }
  },
);

/** Rewrites the signed inventory, then recomputes the bundle digest and re-signs it validly. */
async function resignInventory(f: Fixture, edit: (inventory: any[]) => any[]): Promise<void> {
  await f.mutate('review/review.json', (d) => {
    d.inventory = edit(d.inventory);
    d.evidenceBundleDigest = evidenceBundleDigest(
      evidenceBundle(f.runId, d.inventory, f.facts.config.artifactByNode),
    );
    signRaw(f, d, reviewSigningBytes(d));
  });
  await f.repack();
}

t.test('review-signature: a signed inventory out of path order is refused', async (t) => {
  const f = await buildFixture(t);
  await resignInventory(f, (inv) => {
    t.ok(inv.length >= 2, 'the fixture inventory has at least two entries');
    return [inv[1], inv[0], ...inv.slice(2)];
  });
  await expectRule(t, f, 'review-signature', 'the signed inventory is not sorted by path without duplicates');
});

t.test('review-signature: a signed inventory listing a path twice is refused', async (t) => {
  const f = await buildFixture(t);
  await resignInventory(f, (inv) => [inv[0], ...inv]);
  await expectRule(t, f, 'review-signature', 'the signed inventory is not sorted by path without duplicates');
});

t.test('review-signature: a trust store listing the same key id twice is refused', async (t) => {
  const f = await buildFixture(t);
  const other = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString();
  await commitStore(f, (s) => s.keys.push({ ...s.keys[0], publicKeyPem: other }));
  await expectRule(
    t,
    f,
    'review-signature',
    'trust store controls/review-trust.v1.json lists key reviewer-key-1 twice',
    false,
  );
});

t.test('review-signature: a trust store key whose PEM is not Ed25519 is refused', async (t) => {
  const f = await buildFixture(t);
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 })
    .publicKey.export({ type: 'spki', format: 'pem' })
    .toString();
  // A second, unused key: the reviewer's own key stays valid, so only the PEM check can refuse.
  await commitStore(f, (s) =>
    s.keys.push({
      keyId: 'rsa-key-1',
      algorithm: 'ed25519',
      status: 'active',
      publicKeyPem: rsa,
      allowedActorIds: ['reviewer-actor'],
    }),
  );
  await expectRule(
    t,
    f,
    'review-signature',
    'trust store controls/review-trust.v1.json key rsa-key-1 is not an Ed25519 public key',
    false,
  );
});
