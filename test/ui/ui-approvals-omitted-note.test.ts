import t from 'tap';
import { approvalsOmittedNote } from '../../src/ui/web/src/format.js';

/**
 * The approvals list's note on what the run view left out must say which ones (view-bounds.ts
 * keeps pending approvals oldest first, then the newest decided ones): the older decided ones
 * when every pending approval is shown, the NEWER pending ones when pending approvals overflow.
 */
t.test('only decided approvals left out: the older decided ones', async (t) => {
  t.equal(
    approvalsOmittedNote(3, 1, 1),
    '3 older decided approvals not shown: the run view keeps every pending approval, then the newest decided ones.',
  );
  t.match(approvalsOmittedNote(1, 0, 0), /^1 older decided approval not shown/);
});

t.test('pending approvals overflow: the newer pending ones are left out, never called older', async (t) => {
  const note = approvalsOmittedNote(120, 30, 100);
  t.equal(
    note,
    '120 approvals not shown (70 newer pending, 50 decided): the run view keeps the oldest pending approvals that fit; decide those to see the newer ones.',
  );
  t.notMatch(note, /older approvals/);
  t.match(approvalsOmittedNote(1, 30, 31), /^1 approval not shown \(1 newer pending\)/);
});
