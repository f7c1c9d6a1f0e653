import type { StructuralRule } from './facts.js';

/**
 * SPEC completion rule 2: the configured artifact of every required, non-skipped node is present
 * and verified (an `artifact.written` claim is in the journal) and its node has not failed.
 * Whether the bytes still match the claim is checked by re-hashing around the gate (rule 10).
 */
export const requiredArtifacts: StructuralRule = ({ config, state }) => {
  const problems: string[] = [];
  for (const id of config.requiredNodes) {
    const node = state.nodes[id];
    if (node.state === 'skipped') continue;
    const path = config.artifactByNode[id];
    if (node.state === 'failed') problems.push(`required artifact ${path} of node ${id} failed`);
    if (!state.artifacts[path]) problems.push(`required artifact ${path} of node ${id} is not verified`);
  }
  return problems;
};
