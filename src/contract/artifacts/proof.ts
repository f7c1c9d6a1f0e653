import { type Static, Type } from '#typebox';
import { ArtifactRef, CommitSha, DateTime, Digest, Identifier, RunIdString, Text } from './common.js';

export const PROOF_SCHEMA_ID = 'harness.proof.v1';

/**
 * `harness.proof.v1` (CONTRACT section 6). The schema also admits a failed result so `harness proof
 * run` can record an honest failure; completion rule 6 then demands status passed and every exit 0.
 * `subject` (our addition) names the commit the proof ran at, which commissioned runs must bind
 * (post-proof application mutation is refused against it), and binds the listing of the git-ignored
 * files the proof ran with (`ignored`, a `harness.ignored-files.v1` artifact), which commissioned
 * runs compare with the work tree at completion.
 */
export const ProofCommand = Type.Object(
  {
    command: Text('the command line as run'),
    exitCode: Type.Integer({ minimum: -1, maximum: 255, description: '-1 when killed by a signal' }),
    startedAt: DateTime,
    completedAt: DateTime,
    outputDigest: Digest,
  },
  { additionalProperties: false },
);

export const ProofSchema = Type.Object(
  {
    schema: Type.Literal(PROOF_SCHEMA_ID),
    generatedAt: DateTime,
    runId: RunIdString,
    status: Type.Union([Type.Literal('passed'), Type.Literal('failed')]),
    summary: Text('one-line summary'),
    commands: Type.Array(ProofCommand, { minItems: 1, maxItems: 256 }),
    subject: Type.Optional(
      Type.Object(
        { commit: CommitSha, dirty: Type.Boolean(), ignored: Type.Optional(ArtifactRef) },
        { additionalProperties: false },
      ),
    ),
    environment: Type.Optional(
      Type.Object(
        { id: Identifier, platform: Text('', 64), node: Text('', 64) },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false, $id: PROOF_SCHEMA_ID, title: PROOF_SCHEMA_ID },
);
export type Proof = Static<typeof ProofSchema>;
