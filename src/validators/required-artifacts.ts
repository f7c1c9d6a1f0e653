import type { StructuralRule } from './facts.js';
import type { Problem } from './problem.js';

/**
 * SPEC completion rule 2: the configured artifact of every required, non-skipped node is present
 * and verified (an `artifact.written` claim is in the journal), not failed (neither its node nor
 * the last write of the artifact, `status: failed`) and not skipped without a reason.
 * Whether the bytes still match the claim is checked by re-hashing around the gate (rule 10).
 */
export const requiredArtifacts: StructuralRule = ({ config, state }) => {
  const problems: Problem[] = [];
  for (const nodeId of config.requiredNodes) {
    const node = state.nodes[nodeId];
    if (node.state === 'skipped') continue;
    const path = config.artifactByNode[nodeId];
    const at = { nodeId, path };
    // The node failed, not (necessarily) a write: none may have been made.
    if (node.state === 'failed')
      problems.push({
        kind: 'artifact-node-failed',
        ...at,
        text: `required artifact ${path} cannot count: its node ${nodeId} failed`,
      });
    const artifact = state.artifacts[path];
    if (!artifact)
      problems.push({
        kind: 'artifact-not-verified',
        ...at,
        text: `required artifact ${path} of node ${nodeId} is not verified`,
      });
    else if (artifact.outcome === 'failed')
      problems.push({
        kind: 'artifact-failed',
        ...at,
        text: `required artifact ${path} of node ${nodeId} was reported failed (event ${artifact.seq})`,
      });
    else if (artifact.outcome === 'skipped' && !artifact.skipReason)
      problems.push({
        kind: 'artifact-skipped-without-reason',
        ...at,
        text: `required artifact ${path} of node ${nodeId} is skipped without a reason`,
      });
  }
  return problems;
};
