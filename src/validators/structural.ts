import { approvalsHold } from './approvals.js';
import type { RunFacts, StructuralRule } from './facts.js';
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

export function structuralProblems(facts: RunFacts): string[] {
  return STRUCTURAL_RULES.flatMap(([, rule]) => rule(facts));
}
