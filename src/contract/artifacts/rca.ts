import { type Static, Type } from '#typebox';
import { CommitSha, DateTime, Digest, Identifier, RelPath, RunIdString, Text } from './common.js';

export const RCA_SCHEMA_ID = 'harness.rca.v1';

/** Typed root-cause categories: a free-text "root cause" is a narrative RCA and is refused. */
export const ROOT_CAUSE_CATEGORIES = [
  'logic-error',
  'missing-validation',
  'race-condition',
  'resource-leak',
  'configuration',
  'dependency',
  'data-integrity',
  'environment',
  'interface-contract',
  'process-gap',
  'specification-gap',
] as const;

/** One run of the regression command at one commit (SPEC completion rule 5). */
export const RcaPhase = Type.Object(
  {
    commit: CommitSha,
    command: Text('must equal regression.command'),
    environmentId: Identifier,
    runId: RunIdString,
    exitCode: Type.Integer({ minimum: -1, maximum: 255 }),
    startedAt: DateTime,
    completedAt: DateTime,
    outputDigest: Digest,
  },
  { additionalProperties: false },
);

export const RcaSchema = Type.Object(
  {
    schema: Type.Literal(RCA_SCHEMA_ID),
    runId: RunIdString,
    generatedAt: DateTime,
    status: Type.Union([Type.Literal('confirmed'), Type.Literal('suspected'), Type.Literal('draft')]),
    rootCause: Type.Object(
      {
        category: Type.Enum(ROOT_CAUSE_CATEGORIES),
        summary: Text('one sentence', 1000),
        location: Type.Object(
          { path: RelPath, symbol: Type.Optional(Text('', 400)) },
          { additionalProperties: false, description: 'repository path of the defect' },
        ),
        evidence: Type.Array(Text('', 2000), { minItems: 1, maxItems: 50 }),
      },
      { additionalProperties: false },
    ),
    regression: Type.Object(
      {
        command: Text('the one regression command identity'),
        environment: Type.Object(
          { id: Identifier, description: Type.Optional(Text('', 1000)) },
          { additionalProperties: false },
        ),
      },
      { additionalProperties: false },
    ),
    preFix: RcaPhase,
    postFix: RcaPhase,
  },
  { additionalProperties: false, $id: RCA_SCHEMA_ID, title: RCA_SCHEMA_ID },
);
export type Rca = Static<typeof RcaSchema>;
export type RcaPhaseT = Static<typeof RcaPhase>;
