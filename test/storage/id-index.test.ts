import t from 'tap';
import { IdIndex, keyedFingerprint } from '../../src/storage/id-index.js';

/** The off-heap event-id index: candidates by fingerprint, every added position found again. */
t.test('every id added is found again at its position, through many resizes', async (t) => {
  const index = new IdIndex();
  const n = 20_000;
  for (let i = 0; i < n; i++) index.add(`event-${i}`, i);
  t.equal(index.size, n);
  let missing = 0;
  for (let i = 0; i < n; i++) if (!index.candidates(`event-${i}`).includes(i)) missing++;
  t.equal(missing, 0, 'no added id is lost');
  let spurious = 0;
  for (let i = 0; i < n; i++) spurious += index.candidates(`never-${i}`).length;
  t.ok(spurious < 5, `ids never added almost never match (${spurious} of ${n})`);
});

t.test('ids sharing a fingerprint are all candidates, in journal order', async (t) => {
  const index = new IdIndex(() => 7);
  index.add('c', 5);
  index.add('a', 0);
  index.add('b', 3);
  t.same(index.candidates('anything'), [0, 3, 5]);
});

t.test('the fingerprint is keyed: fixed for this process, not a plain hash of the id', async (t) => {
  t.equal(keyedFingerprint('e1'), keyedFingerprint('e1'));
  t.not(keyedFingerprint('e1'), keyedFingerprint('e2'));
  const { createHash } = await import('node:crypto');
  t.not(
    keyedFingerprint('e1'),
    Number.parseInt(createHash('sha256').update('e1').digest('hex').slice(0, 8), 16),
  );
});
