import type { RunDetail } from './api.js';

/** One line of the completion checklist: a count, and the problems of its kinds with their fixes. */
export interface CheckGroup {
  id: 'nodes' | 'artifacts' | 'approvals' | 'self-heal' | 'proof' | 'production-readiness' | 'other';
  /** What the run's facts say, e.g. "Nodes 3/14 passed". */
  line: string;
  /** The problems that block run.completed here; `fix` is the bridge's next step, when the view kept it. */
  problems: { problem: string; fix?: string }[];
}

/**
 * Which group a problem kind belongs to (src/validators/problem.ts names the kinds; the bridge
 * gives each completion-preview step its kind, so nothing is read back out of the wording). A
 * kind not named here, or a problem whose step the view cut, is "other".
 */
const GROUP_OF: Readonly<Record<string, CheckGroup['id']>> = {
  'node-not-passed': 'nodes',
  'node-skipped-without-reason': 'nodes',
  'artifact-node-failed': 'artifacts',
  'artifact-not-verified': 'artifacts',
  'artifact-failed': 'artifacts',
  'artifact-skipped-without-reason': 'artifacts',
  'artifact-changed': 'artifacts',
  'artifact-unverifiable': 'artifacts',
  'artifact-credential': 'artifacts',
  'approval-pending': 'approvals',
  'approval-drift': 'approvals',
  'self-heal-unresolved': 'self-heal',
  'self-heal-unproven': 'self-heal',
  'self-heal-proposal': 'self-heal',
  proof: 'proof',
  'post-proof-mutation': 'proof',
  'production-readiness': 'production-readiness',
};

/** A blocked group with at most this many problems starts open; a longer one shows its count, closed. */
export const OPEN_UP_TO = 3;

const stateOf = (run: RunDetail, id: string) => run.nodes?.find((n) => n.id === id)?.state ?? 'unknown';

/**
 * The completion preview as a checklist: nodes, artifacts, approvals, self-heal, proof and
 * production readiness, each with its count from the run's facts and the problems of its kinds;
 * then "other" when some problem fits none of them. Counts are the view's (no progress is made up).
 */
export function checklistOf(run: RunDetail): CheckGroup[] {
  const nodes = run.nodes ?? [];
  const withArtifact = nodes.filter((n) => n.artifact !== null);
  const approvals = run.approvals ?? [];
  const pending = approvals.filter((a) => a.status === 'pending').length;
  const skipped = nodes.filter((n) => n.state === 'skipped').length;
  const selfHeal = run.selfHeal;
  const groups: CheckGroup[] = [
    {
      id: 'nodes',
      line: `Nodes ${nodes.filter((n) => n.state === 'passed').length}/${nodes.length} passed${skipped > 0 ? `, ${skipped} skipped` : ''}`,
      problems: [],
    },
    {
      id: 'artifacts',
      line: `Artifacts ${withArtifact.filter((n) => n.artifactVerified).length}/${withArtifact.length} verified`,
      problems: [],
    },
    {
      id: 'approvals',
      line: `Approvals ${pending} pending, ${approvals.length - pending} decided`,
      problems: [],
    },
    {
      id: 'self-heal',
      line: !selfHeal?.detected
        ? 'Self-heal not needed (nothing detected)'
        : selfHeal.resolved
          ? 'Self-heal detected and resolved'
          : 'Self-heal detected, not resolved',
      problems: [],
    },
    { id: 'proof', line: `Proof: node prove is ${stateOf(run, 'prove')}`, problems: [] },
    {
      id: 'production-readiness',
      line: `Production readiness: node production-readiness is ${stateOf(run, 'production-readiness')}`,
      problems: [],
    },
    { id: 'other', line: 'Other', problems: [] },
  ];
  const preview = run.completionPreview;
  const steps = new Map((preview?.steps ?? []).map((s) => [s.problem, s]));
  for (const problem of preview?.problems ?? []) {
    const step = steps.get(problem);
    const id = (step && GROUP_OF[step.kind]) ?? 'other';
    const group = groups.find((g) => g.id === id) as CheckGroup;
    group.problems.push(step ? { problem, fix: step.fix } : { problem });
  }
  return groups.filter((g) => g.id !== 'other' || g.problems.length > 0);
}
