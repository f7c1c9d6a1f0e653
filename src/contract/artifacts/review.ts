import { type Static, Type } from '#typebox';
import {
  ArtifactRef,
  DateTime,
  Digest,
  Identifier,
  RelPath,
  RunIdString,
  Sha256Hex,
  ValidationRuntime,
} from './common.js';

export const REVIEW_SCHEMA_ID = 'harness.review.v2';
export const REVIEW_ROLES = ['scout', 'implementer', 'verifier', 'independentReviewer'] as const;
export type ReviewRole = (typeof REVIEW_ROLES)[number];

/**
 * One role's provenance. actorId, sessionId and executionId must be pairwise distinct across the
 * four roles (a collapsed identity is refused). `evidence` binds what the role produced: the scout
 * binds the route, the implementer and the verifier bind the portable proof.
 */
export const RoleProvenance = Type.Object(
  {
    actorId: Identifier,
    sessionId: Identifier,
    executionId: Identifier,
    runtime: Type.Optional(Identifier),
    evidence: Type.Array(ArtifactRef, { maxItems: 64 }),
  },
  { additionalProperties: false },
);

/** Exactly the four roles: a missing or extra role fails the schema. */
export const Roster = Type.Object(
  {
    scout: RoleProvenance,
    implementer: RoleProvenance,
    verifier: RoleProvenance,
    independentReviewer: RoleProvenance,
  },
  { additionalProperties: false },
);
export type RosterT = Static<typeof Roster>;

export const InventoryEntry = Type.Object(
  { path: RelPath, sha256: Sha256Hex, size: Type.Integer({ minimum: 0 }) },
  { additionalProperties: false },
);
export type InventoryEntryT = Static<typeof InventoryEntry>;

/**
 * `harness.review.v2`. The signature is by a key of the committed, pinned trust store only: the
 * document carries a key *id*, never a key or trust material of its own.
 */
export const ReviewSchema = Type.Object(
  {
    schema: Type.Literal(REVIEW_SCHEMA_ID),
    runId: RunIdString,
    generatedAt: DateTime,
    verdict: Type.Union([Type.Literal('approved'), Type.Literal('changes-requested')]),
    roster: Roster,
    evidenceBundleDigest: Digest,
    inventory: Type.Array(InventoryEntry, { maxItems: 50_000 }),
    validation: Type.Optional(ValidationRuntime),
    signature: Type.Object(
      {
        keyId: Identifier,
        algorithm: Type.Literal('ed25519'),
        value: Type.String({ pattern: '^[A-Za-z0-9+/]{86}==$', description: 'base64 Ed25519 signature' }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false, $id: REVIEW_SCHEMA_ID, title: REVIEW_SCHEMA_ID },
);
export type Review = Static<typeof ReviewSchema>;
