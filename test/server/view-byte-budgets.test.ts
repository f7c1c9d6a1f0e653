import t from 'tap';
import type { ApprovalRecord } from '../../src/contract/index.js';
import { boundedApprovals, boundedLines } from '../../src/server/view-bounds.js';

/**
 * The byte budgets of a run view's growing lists (src/server/view-bounds.ts): each item costs its
 * JSON plus one byte (the comma or bracket beside it), and a list takes items while they fit, to
 * the byte. These pin the boundaries the HTTP tests cannot reach exactly.
 */
const cost = (item: unknown) => Buffer.byteLength(JSON.stringify(item)) + 1;

t.test('boundedLines takes lines while they fit, to the byte, then counts the rest', async (t) => {
  const lines = ['first', 'second', 'third'];
  const all = lines.reduce((n, l) => n + cost(l), 0);
  t.same(boundedLines(lines, all, 'problem'), lines, 'a budget of exactly every line shows every line');
  t.same(
    boundedLines(lines, all - 1, 'problem'),
    ['first', 'second', '1 more problem not shown'],
    'one byte less leaves the last line out',
  );
  t.same(
    boundedLines(lines, cost('first') - 1, 'reason'),
    ['3 more reasons not shown'],
    'a first line that does not fit shows none',
  );
});

const approval = (i: number, status: ApprovalRecord['status'], scope = 'scope'): ApprovalRecord => ({
  nodeId: 'redzone',
  owner: `owner-${i}`,
  scope,
  status,
  requestedSeq: i,
  requestedAt: '2026-11-26T00:00:00.000Z',
  decidedSeq: status === 'pending' ? null : i + 100,
  decidedAt: status === 'pending' ? null : '2026-11-26T00:00:01.000Z',
});
const big = 'x'.repeat(200);
const shown = (all: ApprovalRecord[], budget: number) => {
  const { approvals, omitted } = boundedApprovals(all, budget);
  return { owners: approvals.map((a) => a.owner), omitted };
};

t.test('boundedApprovals: every pending approval first, then the newest decided that fit', async (t) => {
  // Oldest first: decided 0, pending 1, decided 2, pending 3, decided 4.
  const all = [0, 1, 2, 3, 4].map((i) => approval(i, i % 2 === 1 ? 'pending' : 'granted'));
  const [a0, a1, a2, a3, a4] = all.map(cost) as [number, number, number, number, number];
  const every = a0 + a1 + a2 + a3 + a4;
  t.same(shown(all, every), { owners: all.map((a) => a.owner), omitted: 0 }, 'all fit, to the byte');
  t.same(
    shown(all, every - 1),
    { owners: ['owner-1', 'owner-2', 'owner-3', 'owner-4'], omitted: 1 },
    'one byte less: the oldest decided one is left out, the rest listed in request order',
  );
  t.same(
    shown(all, a1 + a3 + a4),
    { owners: ['owner-1', 'owner-3', 'owner-4'], omitted: 2 },
    'the pending ones and the newest decided one',
  );
});

t.test('boundedApprovals never skips an approval that does not fit to show a later one', async (t) => {
  const decided = [approval(0, 'granted'), approval(1, 'denied', big)];
  t.same(
    shown(decided, cost(decided[1]) - 1),
    { owners: [], omitted: 2 },
    'the newest decided one does not fit: no older one is shown in its place',
  );
  const pending = [approval(0, 'pending', big), approval(1, 'pending')];
  t.same(
    shown(pending, cost(pending[1])),
    { owners: [], omitted: 2 },
    'the oldest pending one does not fit: no newer one is shown in its place',
  );
  const mixed = [approval(0, 'pending', big), approval(1, 'granted')];
  t.same(
    shown(mixed, cost(mixed[1])),
    { owners: [], omitted: 2 },
    'a pending one left out: no decided one is shown',
  );
});
