import type { Route } from '../contract/artifacts/index.js';
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
  return routeBindingProblems(r.route, facts.runId);
};

/** The binding itself, shared with `harness route write`, which checks a route before writing it. */
export function routeBindingProblems(route: Route, runId: string): string[] {
  const problems: string[] = [];
  if (route.runId !== runId) problems.push(`route ${route.routeId} is bound to run ${route.runId}`);
  if (route.goal.runId !== runId) {
    problems.push(`goal ${route.goal.goalId} is bound to run ${route.goal.runId}`);
  }
  return problems;
}
