import type { ContentRule } from './facts.js';
import type { InputsOf } from './inputs.js';
import { readRoute } from './route-document.js';

export const routeBindingInputs: InputsOf = (facts) => ({ files: [facts.config.artifactByNode.route] });

/** SPEC completion rule 8: the validated route and its goal are bound to the bridge run ID. */
export const routeBinding: ContentRule = async (facts, env) => {
  if (env.realRoot === null) return ['the route cannot be read: the run has no artifact root'];
  const r = await readRoute(facts, env.realRoot, env.verified);
  if (!r.present) return [`${r.path} is missing`];
  if (!r.route) return r.problems;
  const problems: string[] = [];
  if (r.route.runId !== facts.runId)
    problems.push(`route ${r.route.routeId} is bound to run ${r.route.runId}`);
  if (r.route.goal.runId !== facts.runId) {
    problems.push(`goal ${r.route.goal.goalId} is bound to run ${r.route.goal.runId}`);
  }
  return problems;
};
