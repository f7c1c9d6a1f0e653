import { PROOF_SCHEMA_ID, type Proof } from '../contract/artifacts/index.js';
import { loadDocument } from './documents.js';
import type { ContentRule } from './facts.js';
import type { InputsOf } from './inputs.js';

export const proofInputs: InputsOf = (facts) => ({ files: [facts.config.artifactByNode.prove] });

/**
 * SPEC completion rule 6: the configured proof artifact validates as harness.proof.v1 with a
 * passing result and zero-exit command evidence bound to this run. The rule runs even when the
 * prove node was skipped: prove is always required and a skip cannot stand in for proof.
 */
export const proofRule: ContentRule = async (facts, env) => {
  const path = facts.config.artifactByNode.prove;
  if (env.realRoot === null) return [`${path} cannot be read: the run has no artifact root`];
  const doc = await loadDocument<Proof>(env.realRoot, path, PROOF_SCHEMA_ID, env.verified);
  if (!doc.ok) return doc.problems;
  const proof = doc.value;
  const problems: string[] = [];
  if (proof.runId !== facts.runId) problems.push(`${path} runId ${proof.runId} is not this run`);
  if (proof.status !== 'passed') problems.push(`${path} status is ${proof.status}, not passed`);
  proof.commands.forEach((c, i) => {
    if (c.exitCode !== 0) problems.push(`${path} command ${i} exited ${c.exitCode}, not 0`);
    if (Date.parse(c.completedAt) < Date.parse(c.startedAt)) {
      problems.push(`${path} command ${i} completed before it started`);
    }
  });
  return problems;
};
