import { approvalDrift, pendingApprovals } from '../contract/index.js';
import type { StructuralRule } from './facts.js';
import type { Problem } from './problem.js';

/**
 * SPEC completion rule 3: no approval is pending. And every standing decision still covers the
 * bytes it was made on (issue 28, src/contract/approval-drift.ts): an artifact claimed again with
 * other bytes after a grant or denial needs the approval requested and decided again.
 */
export const approvalsHold: StructuralRule = ({ state }) => [
  ...pendingApprovals(state).map(
    (a): Problem => ({
      kind: 'approval-pending',
      nodeId: a.nodeId,
      owner: a.owner,
      scope: a.scope,
      text: `approval for node ${a.nodeId} (owner ${a.owner}, scope ${a.scope}) is still pending`,
    }),
  ),
  ...approvalDrift(state).map(
    ({ approval: a, decision, path, approvedSha256, currentSha256, currentSeq }): Problem => ({
      kind: 'approval-drift',
      nodeId: a.nodeId,
      owner: a.owner,
      scope: a.scope,
      path,
      text: `approval for node ${a.nodeId} (owner ${a.owner}, scope ${a.scope}) was ${decision} (event ${a.decidedSeq}) on artifact ${path} with sha256 ${approvedSha256}; it is claimed now with sha256 ${currentSha256} (event ${currentSeq}): request the approval again`,
    }),
  ),
];
