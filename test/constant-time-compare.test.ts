import * as crypto from 'node:crypto';
import t, { type Test } from 'tap';

/**
 * CONTRACT 7: MACs compare with `timingSafeEqual`; SPEC Authentication: the tokens are compared in
 * constant time. A plain `===` would give the same answers, so only the calls themselves show it:
 * each comparison below must reach crypto.timingSafeEqual, with buffers of equal length.
 */
const calls: [Buffer, Buffer][] = [];
const cryptoSpy = {
  ...crypto,
  timingSafeEqual: (a: Buffer, b: Buffer) => {
    calls.push([a, b]);
    return crypto.timingSafeEqual(a, b);
  },
};
// Resolved from this file's own URL, so the compiled module beside the compiled test is loaded.
const { macEqual, secretDigest } = await t.mockImport<typeof import('../src/storage/mac.js')>(
  new URL('../src/storage/mac.js', import.meta.url).href,
  { 'node:crypto': cryptoSpy },
);
const { secretMatches } = await t.mockImport<typeof import('../src/server/guard.js')>(
  new URL('../src/server/guard.js', import.meta.url).href,
  { 'node:crypto': cryptoSpy },
);

const compared = (t: Test, run: () => boolean, expected: boolean, label: string) => {
  const before = calls.length;
  t.equal(run(), expected, label);
  t.equal(calls.length, before + 1, `${label}: one timingSafeEqual call`);
  const [a, b] = calls[calls.length - 1]!;
  t.equal(a.length, b.length, `${label}: equal-length buffers`);
};

t.test('MACs', async (t) => {
  const key = Buffer.alloc(32, 7);
  const m = secretDigest(key, 'a secret');
  compared(t, () => macEqual(m, secretDigest(key, 'a secret')), true, 'equal MACs');
  compared(t, () => macEqual(m, secretDigest(key, 'another')), false, 'different MACs');
  compared(t, () => macEqual(m, `${m.slice(0, 63)}0`), m.endsWith('0'), 'one digit apart');
});

t.test('tokens', async (t) => {
  const token = 'an-access-token-of-at-least-32-bytes';
  compared(t, () => secretMatches(token, token), true, 'the token');
  compared(t, () => secretMatches(`${token}x`, token), false, 'a longer one');
  compared(t, () => secretMatches('short', token), false, 'a shorter one');
});
