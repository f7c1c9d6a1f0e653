import type { StructuralRule } from './facts.js';

/**
 * SPEC completion rule 2: the configured artifact of every required, non-skipped node is present
 * and verified (an `artifact.written` claim is in the journal), not failed (neither its node nor
 * the last write of the artifact, `status: failed`) and not skipped without a reason.
 * Whether the bytes still match the claim is checked by re-hashing around the gate (rule 10).
 */
export const requiredArtifacts: StructuralRule = ({ config, state }) => {
  const problems: string[] = [];
  for (const id of config.requiredNodes) {
    const node = state.nodes[id];
    if (node.state === 'skipped') continue;
    const path = config.artifactByNode[id];
    // The node failed, not (necessarily) a write: none may have been made.
    if (node.state === 'failed')
      problems.push(`required artifact ${path} cannot count: its node ${id} failed`);
    const artifact = state.artifacts[path];
    if (!artifact) problems.push(`required artifact ${path} of node ${id} is not verified`);
    else if (artifact.outcome === 'failed')
      problems.push(`required artifact ${path} of node ${id} was reported failed (event ${artifact.seq})`);
    else if (artifact.outcome === 'skipped' && !artifact.skipReason)
      problems.push(`required artifact ${path} of node ${id} is skipped without a reason`);
  }
  return problems;
};
