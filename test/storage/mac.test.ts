import { createHmac, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import t from 'tap';
import { macText, secretDigest } from '../../src/storage/mac.js';

/** The bridge's HMAC (two one-shot hashes over cached pads) against node's own `createHmac`. */
const reference = (key: Buffer, text: string) => createHmac('sha256', key).update(text).digest('hex');

/** Any UTF-16 text, lone surrogates included (both sides encode them as U+FFFD). */
const anyText = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) });

t.test('macText is HMAC-SHA-256 of the domain-separated text, for any key and text', async (t) => {
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 0, maxLength: 200 }), anyText, (k, text) => {
      const key = Buffer.from(k);
      return macText(key, 'harness.journal.v1', text) === reference(key, `harness.journal.v1\0${text}`);
    }),
    { numRuns: 2000 },
  );
  t.pass('2000 random keys and texts agree with createHmac');
});

t.test('a key longer than the 64-byte block is hashed first, as RFC 2104 says', async (t) => {
  // An integrity key is any text the operator sets (HARNESS_BRIDGE_INTEGRITY_KEY): 128 hex
  // characters is a common choice. Every byte of it must count, not only the first 64.
  for (const length of [65, 100, 128, 129, 200]) {
    const key = randomBytes(length);
    t.equal(
      macText(key, 'harness.journal.v1', 'x'),
      reference(key, 'harness.journal.v1\0x'),
      `${length} bytes`,
    );
    const tail = Buffer.from(key);
    tail[length - 1]! ^= 1;
    t.not(
      macText(tail, 'harness.journal.v1', 'x'),
      macText(key, 'harness.journal.v1', 'x'),
      `byte ${length} counts`,
    );
  }
});

t.test('a text larger than the scratch buffer, then a short one, are both right', async (t) => {
  const key = randomBytes(32);
  const long = '\u20ac'.repeat(40_000);
  t.equal(macText(key, 'harness.snapshot.v1', long), reference(key, `harness.snapshot.v1\0${long}`));
  t.equal(macText(key, 'harness.snapshot.v1', 'x'), reference(key, 'harness.snapshot.v1\0x'));
});

t.test('a key buffer changed in place is never MACd with its old pads', async (t) => {
  const key = randomBytes(32);
  const before = macText(key, 'harness.run-config.v1', 'same text');
  key[0]! ^= 1;
  const after = macText(key, 'harness.run-config.v1', 'same text');
  t.not(after, before);
  t.equal(after, reference(key, 'harness.run-config.v1\0same text'));
});

t.test('secretDigest is the HMAC of the human-token domain and the secret', async (t) => {
  const key = randomBytes(32);
  t.equal(secretDigest(key, 'tok\u00e9n'), reference(key, 'harness.human-token.v1\0tok\u00e9n'));
});
