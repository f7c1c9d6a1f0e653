import { type Static, Type } from '#typebox';
import {
  ArtifactRef,
  CommitSha,
  DateTime,
  Identifier,
  RunIdString,
  Sha256Hex,
  Text,
  ValidationRuntime,
} from './common.js';
import { Roster } from './review.js';

export const RUN_PACKET_V3_ID = 'harness.run-packet.v3';
export const RUN_PACKET_V2_ID = 'harness.run-packet.v2';
export const AUTHORITATIVE_ASSURANCE_ID = 'harness.authoritative-assurance.v1';
export const ASSURANCE_LEVELS = ['structural', 'semantic', 'authoritative'] as const;

const Level = Type.Enum(ASSURANCE_LEVELS);

/** A waiver is only honoured while its approval (node, owner, scope) was granted by a human. */
export const Waiver = Type.Object(
  {
    waiverId: Identifier,
    status: Type.Union([Type.Literal('active'), Type.Literal('expired'), Type.Literal('revoked')]),
    reason: Text('', 2000),
    approval: Type.Object(
      { nodeId: Identifier, owner: Text('', 4096), scope: Text('', 4096) },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

/**
 * `harness.run-packet.v3` (`run/packet.json`): binds the subject commit (the post-fix commit for
 * corrective work), the route and goal, the role roster (equal to the review's), the review by
 * hash, the assurance level, the resolved catalogs, claims and waivers.
 */
export const RunPacketV3Schema = Type.Object(
  {
    schema: Type.Literal(RUN_PACKET_V3_ID),
    runId: RunIdString,
    generatedAt: DateTime,
    subject: Type.Object(
      { commit: CommitSha, repository: Type.Optional(Text('', 400)) },
      { additionalProperties: false },
    ),
    route: Type.Object(
      { routeId: Identifier, goalId: Identifier, artifact: ArtifactRef },
      { additionalProperties: false },
    ),
    roles: Roster,
    review: ArtifactRef,
    assuranceLevel: Level,
    catalogs: Type.Array(
      Type.Object(
        { id: Identifier, version: Text('', 64), sha256: Sha256Hex },
        { additionalProperties: false },
      ),
      { maxItems: 256 },
    ),
    claims: Type.Array(
      Type.Object(
        { id: Identifier, kind: Level, statement: Text('', 2000) },
        { additionalProperties: false },
      ),
      { maxItems: 1024 },
    ),
    authoritativeAssurance: Type.Optional(ArtifactRef),
    waivers: Type.Array(Waiver, { maxItems: 256 }),
    validation: Type.Optional(ValidationRuntime),
  },
  { additionalProperties: false, $id: RUN_PACKET_V3_ID, title: RUN_PACKET_V3_ID },
);
export type RunPacketV3 = Static<typeof RunPacketV3Schema>;

/** Historical v2: readable structural evidence only, never sufficient to complete a run. */
export const RunPacketV2Schema = Type.Object(
  {
    schema: Type.Literal(RUN_PACKET_V2_ID),
    runId: RunIdString,
    generatedAt: Type.Optional(DateTime),
    commit: Type.Optional(CommitSha),
    artifacts: Type.Optional(Type.Array(ArtifactRef, { maxItems: 10_000 })),
  },
  { $id: RUN_PACKET_V2_ID, title: RUN_PACKET_V2_ID },
);
export type RunPacketV2 = Static<typeof RunPacketV2Schema>;

/**
 * The authoritative-assurance artifact (spec: named but not shaped). It names the authority and
 * lists every semantic or authoritative claim id of the packet it covers.
 */
export const AuthoritativeAssuranceSchema = Type.Object(
  {
    schema: Type.Literal(AUTHORITATIVE_ASSURANCE_ID),
    runId: RunIdString,
    generatedAt: DateTime,
    authority: Text('who stands behind the claims', 400),
    level: Type.Union([Type.Literal('semantic'), Type.Literal('authoritative')]),
    claimIds: Type.Array(Identifier, { minItems: 1, maxItems: 1024 }),
  },
  { additionalProperties: false, $id: AUTHORITATIVE_ASSURANCE_ID, title: AUTHORITATIVE_ASSURANCE_ID },
);
export type AuthoritativeAssurance = Static<typeof AuthoritativeAssuranceSchema>;
