import type { StructuralRule } from './facts.js';
import type { Problem } from './problem.js';

/** SPEC completion rule 1: every required node is verified present or explicitly skipped with a reason. */
export const requiredNodes: StructuralRule = ({ config, state }) => {
  const problems: Problem[] = [];
  for (const nodeId of config.requiredNodes) {
    const node = state.nodes[nodeId];
    if (node.state === 'skipped') {
      if (!node.skipReason)
        problems.push({
          kind: 'node-skipped-without-reason',
          nodeId,
          text: `required node ${nodeId} is skipped without a reason`,
        });
    } else if (node.state !== 'passed') {
      problems.push({
        kind: 'node-not-passed',
        nodeId,
        text: `required node ${nodeId} is ${node.state}, not passed`,
      });
    }
  }
  return problems;
};
