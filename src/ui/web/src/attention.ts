import type { RunDetail } from './api.js';
import { approveCommand } from './format.js';

/** A pending approval as the "Needs you" lists show it: who decides what, and the two commands. */
export interface PendingDecision {
  runId: string;
  nodeId: string;
  owner: string;
  scope: string;
  requestedAt: string;
  grant: string;
  deny: string;
}

export interface FailedNode {
  runId: string;
  nodeId: string;
  failureReason: string | null;
  recoveryPath: string | null;
}

/** A refused completion: the run is `blocked`, with what still blocks it and how many problems. */
export interface RefusedCompletion {
  runId: string;
  problemCount: number;
  firstProblems: string[];
}

export interface Attention {
  pending: PendingDecision[];
  failed: FailedNode[];
  refused: RefusedCompletion | null;
}

/** How many of a refused completion's problems the banner names; the completion panel has them all. */
export const FIRST_PROBLEMS = 3;

/**
 * What in one run waits for a person, in the order a person acts on it: pending approvals (the only
 * thing a human alone can unblock), failed nodes, then a refused completion. A quarantined run's
 * view carries none of these (its record is not trusted); its own banner says why.
 */
export function attentionOf(run: RunDetail): Attention {
  if (run.status === 'quarantined') return { pending: [], failed: [], refused: null };
  const open = (run.approvals ?? []).filter((a) => a.status === 'pending');
  const pending = open.map((a) => {
    // `--node` only when approve could not tell the approvals apart by owner and scope alone.
    const twins = open.filter((b) => b.owner === a.owner && b.scope === a.scope).length;
    const node = twins > 1 ? a.nodeId : undefined;
    return {
      runId: run.id,
      nodeId: a.nodeId,
      owner: a.owner,
      scope: a.scope,
      requestedAt: a.requestedAt,
      grant: approveCommand(run.id, a.owner, a.scope, 'grant', node),
      deny: approveCommand(run.id, a.owner, a.scope, 'deny', node),
    };
  });
  const failed = (run.nodes ?? [])
    .filter((n) => n.state === 'failed')
    .map((n) => ({
      runId: run.id,
      nodeId: n.id,
      failureReason: n.failureReason,
      recoveryPath: n.recoveryPath,
    }));
  const problems = run.completionPreview?.problems ?? [];
  const refused =
    run.status === 'blocked'
      ? { runId: run.id, problemCount: problems.length, firstProblems: problems.slice(0, FIRST_PROBLEMS) }
      : null;
  return { pending, failed, refused };
}

export const needsNothing = (a: Attention): boolean =>
  a.pending.length === 0 && a.failed.length === 0 && a.refused === null;
