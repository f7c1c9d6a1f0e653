import t from 'tap';
import type { EventItem, NodeItem } from '../../src/ui/web/src/api.js';
import { firstFailureSeq, formatGap, gapsBySeq, pageCaption } from '../../src/ui/web/src/event-scan.js';

t.test('the caption uses the numbers the items carry (#seq)', async (t) => {
  t.equal(pageCaption(250, 50, 300), 'Events #250–#299 of 300');
  t.equal(pageCaption(0, 1, 1), 'Events #0–#0 of 1');
  t.equal(pageCaption(0, 0, 0), 'No events recorded.');
});

t.test('gaps are between consecutive events only', async (t) => {
  const at = (seq: number, ts: string) => ({ seq, ts }) as EventItem;
  const gaps = gapsBySeq([
    at(7, '2026-01-01T00:00:05.000Z'),
    at(5, '2026-01-01T00:00:00.000Z'),
    at(6, '2026-01-01T00:00:01.500Z'),
  ]);
  t.same(
    [...gaps],
    [
      [6, 1500],
      [7, 3500],
    ],
  );
  t.same([850, 4200, 185_000, 7_800_000].map(formatGap), ['850 ms', '4.2 s', '3 min 5 s', '2 h 10 min']);
});

t.test('the first failure is the lowest seq that failed a node', async (t) => {
  const node = (state: string, updatedSeq: number | null) => ({ state, updatedSeq }) as NodeItem;
  t.equal(firstFailureSeq([node('failed', 40), node('passed', 3), node('failed', 12)]), 12);
  t.equal(firstFailureSeq([node('passed', 3)]), null);
});
