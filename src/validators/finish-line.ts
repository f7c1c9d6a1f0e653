import { correctiveWork, correctiveWorkInputs } from './corrective-work.js';
import { REFERENCED_DOCUMENTS } from './documents.js';
import {
  assuranceRequired,
  type ContentRule,
  type FinishLineEnv,
  type FinishLineStage,
  type RunFacts,
} from './facts.js';
import { type InputsOf, mergeInputs, type ValidatorInputs } from './inputs.js';
import { postProofMutation, postProofMutationInputs } from './post-proof-mutation.js';
import type { ContentKind, Problem } from './problem.js';
import { productionReadiness, productionReadinessInputs } from './production-readiness.js';
import { proofInputs, proofRule } from './proof.js';
import { reviewInputs, reviewRule } from './review.js';
import { reviewSignature, reviewSignatureInputs } from './review-signature.js';
import { routeBinding, routeBindingInputs } from './route-binding.js';
import { runPacket, runPacketInputs } from './run-packet.js';
import { secretScan, secretScanInputs } from './secret-scan.js';
import { selfHealProposal, selfHealProposalInputs } from './self-heal-proposal.js';
import { STRUCTURAL_RULES } from './structural.js';
import { externalValidationRuntime, externalValidationRuntimeInputs } from './validation-runtime.js';
import { waivers, waiversInputs } from './waivers.js';

/** A content rule with the declaration of what it reads under the artifact root (inputs.ts). */
export type ContentRuleEntry = readonly [name: ContentKind, rule: ContentRule, inputs: InputsOf];

/** Content rules every run passes through, in their fixed order. */
export const CONTENT_RULES: readonly ContentRuleEntry[] = [
  ['self-heal-proposal', selfHealProposal, selfHealProposalInputs],
  ['corrective-work', correctiveWork, correctiveWorkInputs],
  ['proof', proofRule, proofInputs],
  ['production-readiness', productionReadiness, productionReadinessInputs],
];

/** Commissioned assurance (SPEC completion rules 8 and 9), after the content rules. */
export const ASSURANCE_RULES: readonly ContentRuleEntry[] = [
  ['route-binding', routeBinding, routeBindingInputs],
  ['review', reviewRule, reviewInputs],
  ['review-signature', reviewSignature, reviewSignatureInputs],
  ['run-packet', runPacket, runPacketInputs],
  ['waivers', waivers, waiversInputs],
  ['external-validation-runtime', externalValidationRuntime, externalValidationRuntimeInputs],
  ['post-proof-mutation', postProofMutation, postProofMutationInputs],
];

/** The content rules that run for these facts, in order: the one choice runFinishLine makes. */
export function contentRulesFor(facts: RunFacts): readonly ContentRuleEntry[] {
  return assuranceRequired(facts) ? [...CONTENT_RULES, ...ASSURANCE_RULES] : CONTENT_RULES;
}

/**
 * Everything the rules that run for these facts, and the privacy check's secret scan, read under
 * the artifact root and in the repository at `stage` (the structural rules read none): at `read`,
 * what the completed-run verdict cache key binds.
 */
export function validatorInputs(facts: RunFacts, stage: FinishLineStage = 'gate'): ValidatorInputs {
  return mergeInputs([
    ...contentRulesFor(facts).map(([, , inputs]) => inputs(facts, stage)),
    secretScanInputs(facts, stage),
  ]);
}

/**
 * What the artifact and privacy check reads by name beyond the claimed artifacts: the referenced
 * documents and the rules' documents (whose named paths it follows as well), and the rules'
 * by-name files. The bridge's check (server/artifact-check.ts) and a client's
 * (local-artifact-check.ts) read the same set.
 */
export function checkedByName(facts: RunFacts): { documents: string[]; files: readonly string[] } {
  const inputs = validatorInputs(facts);
  return { documents: [...new Set([...REFERENCED_DOCUMENTS, ...inputs.documents])], files: inputs.files };
}

export interface FinishLineResult {
  problems: string[];
  /** The same problems, in the same order, with their kinds (problem.ts): what next-step.ts reads. */
  findings: Problem[];
  rules: { name: string; problems: string[] }[];
}

const failed = (what: string, err: unknown): Problem => ({
  kind: 'validators-failed',
  text: `${what} failed: ${err instanceof Error ? err.message : String(err)}`,
});

/**
 * Runs every rule and collects every problem (a rejected completion tells the agent all that is
 * wrong at once). A rule that throws is a problem named after the rule, never a pass. Content
 * problems are prefixed `<rule>: ` so callers and tests can match the rule, not the wording, and
 * carry the rule's name as their kind. Last, the privacy check's secret scan (secret-scan.ts),
 * which is not a finish-line rule: its problems name the artifact as the bridge's own privacy
 * problems do, without a rule prefix.
 */
export async function runFinishLine(facts: RunFacts, env: FinishLineEnv): Promise<FinishLineResult> {
  const rules: { name: string; findings: Problem[] }[] = [];
  for (const [name, rule] of STRUCTURAL_RULES) {
    let findings: Problem[];
    try {
      findings = rule(facts);
    } catch (err) {
      findings = [failed(`${name}: the rule`, err)];
    }
    rules.push({ name, findings });
  }
  for (const [name, rule] of contentRulesFor(facts)) {
    let findings: Problem[];
    try {
      findings = (await rule(facts, env)).map((p) => ({ kind: name, text: `${name}: ${p}` }));
    } catch (err) {
      findings = [failed(`${name}: the rule`, err)];
    }
    rules.push({ name, findings });
  }
  let secrets: Problem[];
  try {
    secrets = (await secretScan(facts, env)).map((text) => ({ kind: 'secret-scan', text }));
  } catch (err) {
    secrets = [failed('the secret scan', err)];
  }
  rules.push({ name: 'secret-scan', findings: secrets });
  const findings = rules.flatMap((r) => r.findings);
  return {
    problems: findings.map((p) => p.text),
    findings,
    rules: rules.map((r) => ({ name: r.name, problems: r.findings.map((p) => p.text) })),
  };
}
