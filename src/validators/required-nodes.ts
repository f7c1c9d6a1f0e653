import type { StructuralRule } from './facts.js';

/** SPEC completion rule 1: every required node is verified present or explicitly skipped with a reason. */
export const requiredNodes: StructuralRule = ({ config, state }) => {
  const problems: string[] = [];
  for (const id of config.requiredNodes) {
    const node = state.nodes[id];
    if (node.state === 'skipped') {
      if (!node.skipReason) problems.push(`required node ${id} is skipped without a reason`);
    } else if (node.state !== 'passed') {
      problems.push(`required node ${id} is ${node.state}, not passed`);
    }
  }
  return problems;
};
