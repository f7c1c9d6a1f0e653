import { SELF_HEAL_PROPOSAL_SCHEMA_ID, type SelfHealProposal } from '../contract/artifacts/index.js';
import { SELF_HEAL_PROPOSAL_PATH } from '../contract/index.js';
import { loadDocument } from './documents.js';
import type { ContentRule } from './facts.js';
import type { InputsOf } from './inputs.js';
import { verifiedDigest } from './verified-bytes.js';

/**
 * A self-heal resolved by a local proposal: self_heal/pr.json must be a harness.self-heal-proposal.v1
 * for this run whose patch artifact is present at the bound hash. (The structural self-heal rule
 * checks only that the proposal was verified into the journal.)
 */
/** The proposal, when the resolution names it, and the patch it names. */
export const selfHealProposalInputs: InputsOf = (facts) =>
  facts.state.selfHeal.resolution?.artifact === SELF_HEAL_PROPOSAL_PATH
    ? { files: [SELF_HEAL_PROPOSAL_PATH], documents: [SELF_HEAL_PROPOSAL_PATH] }
    : { files: [] };

export const selfHealProposal: ContentRule = async (facts, env) => {
  const resolution = facts.state.selfHeal.resolution;
  if (resolution?.artifact !== SELF_HEAL_PROPOSAL_PATH) return [];
  if (env.realRoot === null)
    return [`${SELF_HEAL_PROPOSAL_PATH} cannot be read: the run has no artifact root`];
  const doc = await loadDocument<SelfHealProposal>(
    env.realRoot,
    SELF_HEAL_PROPOSAL_PATH,
    SELF_HEAL_PROPOSAL_SCHEMA_ID,
    env.verified,
  );
  if (!doc.ok) return doc.problems;
  const problems: string[] = [];
  if (doc.value.runId !== facts.runId) problems.push(`${SELF_HEAL_PROPOSAL_PATH} runId is not this run`);
  const patch = doc.value.patch;
  if (patch.path === SELF_HEAL_PROPOSAL_PATH) problems.push('the proposal cannot be its own patch');
  else {
    const current = await verifiedDigest(env.realRoot, patch.path, env.verified, env.artifactMaxBytes);
    if (current instanceof Error) problems.push(`proposal patch: ${current.message}`);
    else if (current !== patch.sha256) problems.push(`proposal patch ${patch.path} does not match its hash`);
  }
  return problems;
};
