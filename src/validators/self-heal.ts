import { isPullRequestUrl, SELF_HEAL_PROPOSAL_PATH } from '../contract/index.js';
import type { StructuralRule } from './facts.js';

/**
 * SPEC completion rule 4: a `self_heal.detected` needs a later pr_opened or pr_proposed carrying a
 * real pull request URL or a verified `self_heal/pr.json` proposal.
 */
export const selfHealResolved: StructuralRule = ({ state }) => {
  const { detectedSeq, resolvedSeq, resolution } = state.selfHeal;
  if (detectedSeq === null) return [];
  if (resolvedSeq === null || resolvedSeq < detectedSeq || resolution === null) {
    return [
      {
        kind: 'self-heal-unresolved',
        text: 'self_heal.detected has no later self_heal.pr_opened or self_heal.pr_proposed',
      },
    ];
  }
  const urlOk = isPullRequestUrl(resolution.prUrl ?? undefined);
  // A proposal whose last write reported `failed` is no resolution (as for rule 2's artifacts).
  const proposalOk =
    resolution.artifact === SELF_HEAL_PROPOSAL_PATH &&
    state.artifacts[SELF_HEAL_PROPOSAL_PATH] !== undefined &&
    state.artifacts[SELF_HEAL_PROPOSAL_PATH].outcome !== 'failed';
  return urlOk || proposalOk
    ? []
    : [
        {
          kind: 'self-heal-unproven',
          text: 'self-heal resolution carries neither a pull request URL nor a verified self_heal/pr.json',
        },
      ];
};
