import t from 'tap';
import type { RunDetail } from '../../src/ui/web/src/api.js';
import { attentionOf, FIRST_PROBLEMS, needsNothing } from '../../src/ui/web/src/attention.js';
import { runDetail } from '../helpers/ui-run-detail.js';

const view = runDetail;
const approval = (nodeId: string, owner: string, scope: string, status = 'pending') => ({
  nodeId,
  owner,
  scope,
  status,
  requestedSeq: 1,
  requestedAt: '2026-01-01T00:00:00.000Z',
  decidedSeq: null,
  decidedAt: null,
});

t.test('pending approvals only, each with its two commands; --node only for twins', async (t) => {
  const a = attentionOf(
    view({
      approvals: [
        approval('redzone', 'sec', 'deploy'),
        approval('implement', 'sec', 'deploy'),
        approval('prove', 'qa', 'ship'),
        approval('route', 'qa', 'ship', 'granted'),
      ] as NonNullable<RunDetail['approvals']>,
    }),
  );
  t.same(
    a.pending.map((p) => p.grant),
    [
      'harness approve r1 --owner sec --scope deploy --node redzone --grant',
      'harness approve r1 --owner sec --scope deploy --node implement --grant',
      'harness approve r1 --owner qa --scope ship --grant',
    ],
  );
  t.match(
    a.pending[2]?.deny,
    /--deny --failure-reason \(why-the-node-fails\) --recovery-path \(what-happens-next\)$/,
  );
});

t.test('a refused completion is a blocked run, with its first problems and their count', async (t) => {
  const problems = ['a', 'b', 'c', 'd', 'e'];
  const blocked = attentionOf(
    view({ status: 'blocked', completionPreview: { ready: false, problems, steps: [] } }),
  );
  t.same(blocked.refused, { runId: 'r1', problemCount: 5, firstProblems: problems.slice(0, FIRST_PROBLEMS) });
  const running = attentionOf(view({ completionPreview: { ready: false, problems, steps: [] } }));
  t.equal(running.refused, null, 'a run not yet refused is not a refusal');
  t.ok(needsNothing(running));
});

t.test('a quarantined run needs nothing here: its record is not trusted', async (t) => {
  const a = attentionOf(
    view({
      status: 'quarantined',
      approvals: [approval('redzone', 'sec', 'deploy')] as NonNullable<RunDetail['approvals']>,
    }),
  );
  t.ok(needsNothing(a));
});
