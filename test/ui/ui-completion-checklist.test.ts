import t from 'tap';
import type { NodeItem, RunDetail } from '../../src/ui/web/src/api.js';
import { checklistOf } from '../../src/ui/web/src/checklist.js';
import { runDetail } from '../helpers/ui-run-detail.js';

const node = (id: string, state: string, artifact: string | null = null, artifactVerified = false) =>
  ({ id, state, required: true, artifact, artifactVerified }) as NodeItem;

const view = runDetail;
const step = (problem: string, kind: string, fix = `fix ${problem}`) => ({ problem, kind, fix });
const byId = (groups: ReturnType<typeof checklistOf>) => Object.fromEntries(groups.map((g) => [g.id, g]));

t.test('the counts come from the nodes, artifacts, approvals and self-heal of the view', async (t) => {
  const groups = byId(
    checklistOf(
      view({
        nodes: [
          node('intake', 'passed', 'a.json', true),
          node('route', 'passed', 'b.json', false),
          node('design-anchors', 'skipped'),
          node('prove', 'failed', 'proof.json', false),
          node('production-readiness', 'active'),
        ],
        approvals: [{ status: 'pending' }, { status: 'granted' }, { status: 'denied' }] as NonNullable<
          RunDetail['approvals']
        >,
        selfHeal: {
          detected: true,
          detectedSeq: 3,
          resolved: false,
          resolvedSeq: null,
          prUrl: null,
          artifact: null,
        },
      }),
    ),
  );
  t.equal(groups['nodes']?.line, 'Nodes 2/5 passed, 1 skipped');
  t.equal(groups['artifacts']?.line, 'Artifacts 1/3 verified');
  t.equal(groups['approvals']?.line, 'Approvals 1 pending, 2 decided');
  t.equal(groups['self-heal']?.line, 'Self-heal detected, not resolved');
  t.equal(groups['proof']?.line, 'Proof: node prove is failed');
  t.equal(groups['production-readiness']?.line, 'Production readiness: node production-readiness is active');
  t.notOk(groups['other'], 'no "other" group when every problem has its group');
});

t.test(
  'each problem goes to the group of its kind, with its fix; an unknown or cut one to other',
  async (t) => {
    const problems = ['n', 'a', 'ap', 'sh', 'pr', 'prod', 'new kind', 'cut'];
    const groups = byId(
      checklistOf(
        view({
          completionPreview: {
            ready: false,
            problems,
            steps: [
              step('n', 'node-not-passed'),
              step('a', 'artifact-not-verified'),
              step('ap', 'approval-pending'),
              step('sh', 'self-heal-unresolved'),
              step('pr', 'post-proof-mutation'),
              step('prod', 'production-readiness'),
              step('new kind', 'a-kind-from-a-newer-bridge'),
            ],
          },
        }),
      ),
    );
    t.same(groups['nodes']?.problems, [{ problem: 'n', fix: 'fix n' }]);
    t.same(groups['artifacts']?.problems, [{ problem: 'a', fix: 'fix a' }]);
    t.same(groups['approvals']?.problems, [{ problem: 'ap', fix: 'fix ap' }]);
    t.same(groups['self-heal']?.problems, [{ problem: 'sh', fix: 'fix sh' }]);
    t.same(groups['proof']?.problems, [{ problem: 'pr', fix: 'fix pr' }]);
    t.same(groups['production-readiness']?.problems, [{ problem: 'prod', fix: 'fix prod' }]);
    t.same(
      groups['other']?.problems,
      [{ problem: 'new kind', fix: 'fix new kind' }, { problem: 'cut' }],
      'a kind not known here, and a problem whose step the view cut (no fix shown)',
    );
    const total = Object.values(groups).reduce((n, g) => n + g.problems.length, 0);
    t.equal(total, problems.length, 'every problem is listed once');
  },
);
