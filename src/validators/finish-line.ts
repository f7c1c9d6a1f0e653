import { correctiveWork } from './corrective-work.js';
import { assuranceRequired, type ContentRule, type FinishLineEnv, type RunFacts } from './facts.js';
import { postProofMutation } from './post-proof-mutation.js';
import { productionReadiness } from './production-readiness.js';
import { proofRule } from './proof.js';
import { reviewRule } from './review.js';
import { reviewSignature } from './review-signature.js';
import { routeBinding } from './route-binding.js';
import { runPacket } from './run-packet.js';
import { selfHealProposal } from './self-heal-proposal.js';
import { STRUCTURAL_RULES } from './structural.js';
import { externalValidationRuntime } from './validation-runtime.js';
import { waivers } from './waivers.js';

/** Content rules every run passes through, in their fixed order. */
export const CONTENT_RULES: readonly (readonly [string, ContentRule])[] = [
  ['self-heal-proposal', selfHealProposal],
  ['corrective-work', correctiveWork],
  ['proof', proofRule],
  ['production-readiness', productionReadiness],
];

/** Commissioned assurance (SPEC completion rules 8 and 9), after the content rules. */
export const ASSURANCE_RULES: readonly (readonly [string, ContentRule])[] = [
  ['route-binding', routeBinding],
  ['review', reviewRule],
  ['review-signature', reviewSignature],
  ['run-packet', runPacket],
  ['waivers', waivers],
  ['external-validation-runtime', externalValidationRuntime],
  ['post-proof-mutation', postProofMutation],
];

export interface FinishLineResult {
  problems: string[];
  rules: { name: string; problems: string[] }[];
}

/**
 * Runs every rule and collects every problem (a rejected completion tells the agent all that is
 * wrong at once). A rule that throws is a problem named after the rule, never a pass. Content
 * problems are prefixed `<rule>: ` so callers and tests can match the rule, not the wording.
 */
export async function runFinishLine(facts: RunFacts, env: FinishLineEnv): Promise<FinishLineResult> {
  const rules: FinishLineResult['rules'] = [];
  for (const [name, rule] of STRUCTURAL_RULES) {
    let problems: string[];
    try {
      problems = rule(facts);
    } catch (err) {
      problems = [`${name}: the rule failed: ${err instanceof Error ? err.message : String(err)}`];
    }
    rules.push({ name, problems });
  }
  const content = assuranceRequired(facts) ? [...CONTENT_RULES, ...ASSURANCE_RULES] : CONTENT_RULES;
  for (const [name, rule] of content) {
    let problems: string[];
    try {
      problems = (await rule(facts, env)).map((p) => `${name}: ${p}`);
    } catch (err) {
      problems = [`${name}: the rule failed: ${err instanceof Error ? err.message : String(err)}`];
    }
    rules.push({ name, problems });
  }
  return { problems: rules.flatMap((r) => r.problems), rules };
}
