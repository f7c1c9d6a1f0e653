import { type Static, Type } from '#typebox';
import { Identifier, Text } from './common.js';

export const REVIEW_TRUST_SCHEMA_ID = 'harness.review-trust.v1';
export const TRUST_STORE_PATH = 'controls/review-trust.v1.json';
export const PACK_TRUST_STORE_PATH = '.harness-pack/controls/review-trust.v1.json';

/**
 * The review trust store (CONTRACT section 6). It is read only from the committed tree and pinned by
 * HARNESS_REVIEW_TRUST_SHA256 over its canonical JSON; an empty key list is valid.
 */
export const TrustKey = Type.Object(
  {
    keyId: Identifier,
    algorithm: Type.Literal('ed25519'),
    status: Type.Union([Type.Literal('active'), Type.Literal('revoked')]),
    publicKeyPem: Type.String({
      minLength: 1,
      maxLength: 4096,
      pattern: '^-----BEGIN PUBLIC KEY-----',
    }),
    allowedActorIds: Type.Array(Identifier, { minItems: 1, maxItems: 256 }),
  },
  { additionalProperties: false },
);

export const ReviewTrustSchema = Type.Object(
  {
    schema: Type.Literal(REVIEW_TRUST_SCHEMA_ID),
    description: Type.Optional(Text('', 2000)),
    keys: Type.Array(TrustKey, { maxItems: 1024 }),
  },
  { additionalProperties: false, $id: REVIEW_TRUST_SCHEMA_ID, title: REVIEW_TRUST_SCHEMA_ID },
);
export type ReviewTrust = Static<typeof ReviewTrustSchema>;
export type TrustKeyT = Static<typeof TrustKey>;
