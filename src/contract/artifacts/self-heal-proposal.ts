import { type Static, Type } from '#typebox';
import { ArtifactRef, DateTime, RelPath, RunIdString, Text } from './common.js';

export const SELF_HEAL_PROPOSAL_SCHEMA_ID = 'harness.self-heal-proposal.v1';

/**
 * `self_heal/pr.json`: a local proposal standing in for a pull request. It must name the run, the
 * gap it closes and a patch artifact bound by hash (the patch lives under the artifact root).
 */
export const SelfHealProposalSchema = Type.Object(
  {
    schema: Type.Literal(SELF_HEAL_PROPOSAL_SCHEMA_ID),
    runId: RunIdString,
    generatedAt: DateTime,
    title: Text('', 300),
    gap: Text('the harness/process gap found by the finish line', 2000),
    target: Type.Object(
      { repository: Text('', 400), baseRef: Text('', 200) },
      { additionalProperties: false },
    ),
    patch: ArtifactRef,
    files: Type.Array(RelPath, { minItems: 1, maxItems: 500, description: 'files the patch touches' }),
  },
  { additionalProperties: false, $id: SELF_HEAL_PROPOSAL_SCHEMA_ID, title: SELF_HEAL_PROPOSAL_SCHEMA_ID },
);
export type SelfHealProposal = Static<typeof SelfHealProposalSchema>;
