import type { TSchema } from '#typebox';
import { type DocumentChecker, documentChecker } from './check.js';
import { IGNORED_FILES_SCHEMA_ID, IgnoredFilesSchema } from './ignored-files.js';
import {
  PRODUCTION_READINESS_V1_ID,
  PRODUCTION_READINESS_V2_ID,
  ProductionReadinessV1Schema,
  ProductionReadinessV2Schema,
} from './production-readiness.js';
import { PROOF_SCHEMA_ID, ProofSchema } from './proof.js';
import { RCA_SCHEMA_ID, RcaSchema } from './rca.js';
import { REVIEW_SCHEMA_ID, ReviewSchema } from './review.js';
import { REVIEW_TRUST_SCHEMA_ID, ReviewTrustSchema } from './review-trust.js';
import { ROUTE_SCHEMA_ID, RouteSchema } from './route.js';
import {
  AUTHORITATIVE_ASSURANCE_ID,
  AuthoritativeAssuranceSchema,
  RUN_PACKET_V2_ID,
  RUN_PACKET_V3_ID,
  RunPacketV2Schema,
  RunPacketV3Schema,
} from './run-packet.js';
import { SECRETS_ALLOWED_SCHEMA_ID, SecretsAllowedSchema } from './secrets-allowed.js';
import { SELF_HEAL_PROPOSAL_SCHEMA_ID, SelfHealProposalSchema } from './self-heal-proposal.js';

export * from './check.js';
export * from './common.js';
export * from './ignored-files.js';
export * from './production-readiness.js';
export * from './proof.js';
export * from './rca.js';
export * from './review.js';
export * from './review-trust.js';
export * from './route.js';
export * from './run-packet.js';
export * from './secrets-allowed.js';
export * from './self-heal-proposal.js';

/** Every artifact schema, by id: the source of docs/schema/<id>.schema.json. */
export const ARTIFACT_SCHEMAS: Readonly<Record<string, TSchema>> = {
  [PROOF_SCHEMA_ID]: ProofSchema,
  [PRODUCTION_READINESS_V2_ID]: ProductionReadinessV2Schema,
  [PRODUCTION_READINESS_V1_ID]: ProductionReadinessV1Schema,
  [RCA_SCHEMA_ID]: RcaSchema,
  [REVIEW_SCHEMA_ID]: ReviewSchema,
  [RUN_PACKET_V3_ID]: RunPacketV3Schema,
  [RUN_PACKET_V2_ID]: RunPacketV2Schema,
  [REVIEW_TRUST_SCHEMA_ID]: ReviewTrustSchema,
  [SELF_HEAL_PROPOSAL_SCHEMA_ID]: SelfHealProposalSchema,
  [ROUTE_SCHEMA_ID]: RouteSchema,
  [AUTHORITATIVE_ASSURANCE_ID]: AuthoritativeAssuranceSchema,
  [SECRETS_ALLOWED_SCHEMA_ID]: SecretsAllowedSchema,
  [IGNORED_FILES_SCHEMA_ID]: IgnoredFilesSchema,
};

const checkers = new Map<string, DocumentChecker>();

/** Compiled once per process, on first use. */
export function checkerFor(id: string): DocumentChecker {
  let c = checkers.get(id);
  if (!c) {
    const schema = ARTIFACT_SCHEMAS[id];
    if (!schema) throw new Error(`unknown artifact schema ${id}`);
    c = documentChecker(id, schema);
    checkers.set(id, c);
  }
  return c;
}
