import type { NodeId } from './enums.js';
import type { ApprovalRecord, ApprovalSeal, RunState } from './run-state.js';

/**
 * Approvals bound to what was approved (issue 28). A human decides on the bytes in front of them:
 * a grant or denial seals the digest of every artifact its node had claimed at that moment
 * (`approvalSeal`), and stands for those bytes only. An artifact claimed again with other bytes
 * afterwards leaves a decision nobody made about the new bytes, which completion refuses until a
 * fresh `approval.requested` on the same node, owner and scope is decided (the latest decision of
 * a key is the one that stands). A denial is held to its bytes the same way: rewriting what was
 * denied neither lifts the denial nor turns it into a decision about the rewrite.
 */

/** The seal a decision on `nodeId` records: each path whose latest claim was made on that node. */
export function approvalSeal(state: RunState, nodeId: NodeId): ApprovalSeal {
  const claims = Object.values(state.artifacts)
    .filter((a) => a.nodeId === nodeId)
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { approved: Object.fromEntries(claims.map((a) => [a.path, a.sha256])) };
}

/** A standing decision whose artifact is now claimed with other bytes than it was decided on. */
export interface ApprovalDrift {
  approval: ApprovalRecord;
  decision: 'granted' | 'denied';
  path: string;
  approvedSha256: string;
  currentSha256: string;
  /** The event of the claim that changed it. */
  currentSeq: number;
}

const keyOf = (a: ApprovalRecord) => JSON.stringify([a.nodeId, a.owner, a.scope]);

/**
 * Every drift of the run's standing decisions, in request order. A decision stands until a later
 * decision on the same key; one recorded before the seal binds no bytes. Sealed decisions whose
 * bytes all still hold (nearly every run) cost one pass and no key.
 */
export function approvalDrift(state: RunState): ApprovalDrift[] {
  const drifted: ApprovalDrift[] = [];
  for (const approval of state.approvals) {
    if (approval.status === 'pending' || approval.approved === undefined) continue;
    for (const [path, approvedSha256] of Object.entries(approval.approved)) {
      const now = Object.hasOwn(state.artifacts, path) ? state.artifacts[path] : undefined;
      if (now === undefined || now.sha256 === approvedSha256) continue;
      drifted.push({
        approval,
        decision: approval.status,
        path,
        approvedSha256,
        currentSha256: now.sha256,
        currentSeq: now.seq,
      });
    }
  }
  if (drifted.length === 0) return drifted;
  const latest = new Map<string, number>();
  for (const a of state.approvals) {
    if (a.decidedSeq === null) continue;
    const key = keyOf(a);
    if ((latest.get(key) ?? -1) < a.decidedSeq) latest.set(key, a.decidedSeq);
  }
  return drifted.filter((d) => latest.get(keyOf(d.approval)) === d.approval.decidedSeq);
}
