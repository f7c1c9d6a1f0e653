import { approvalsHold } from './approvals.js';
import type { RunFacts, StructuralRule } from './facts.js';
import { type Problem, texts } from './problem.js';
import { requiredArtifacts } from './required-artifacts.js';
import { requiredNodes } from './required-nodes.js';
import { selfHealResolved } from './self-heal.js';

/** The structural rules in their fixed order (SPEC completion rules 1-4). */
export const STRUCTURAL_RULES: readonly (readonly [string, StructuralRule])[] = [
  ['required-nodes', requiredNodes],
  ['required-artifacts', requiredArtifacts],
  ['approvals', approvalsHold],
  ['self-heal', selfHealResolved],
];

/** Every structural problem, with its kind (next-step.ts). */
export function structuralFindings(facts: RunFacts): Problem[] {
  return STRUCTURAL_RULES.flatMap(([, rule]) => rule(facts));
}

export function structuralProblems(facts: RunFacts): string[] {
  return texts(structuralFindings(facts));
}
