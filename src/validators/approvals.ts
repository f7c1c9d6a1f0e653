import { pendingApprovals } from '../contract/index.js';
import type { StructuralRule } from './facts.js';

/** SPEC completion rule 3: no approval is pending. */
export const noPendingApproval: StructuralRule = ({ state }) =>
  pendingApprovals(state).map(
    (a) => `approval for node ${a.nodeId} (owner ${a.owner}, scope ${a.scope}) is still pending`,
  );
