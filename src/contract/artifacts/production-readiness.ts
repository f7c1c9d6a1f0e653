import { type Static, Type } from '#typebox';
import { DateTime, Identifier, RunIdString, Text } from './common.js';

export const PRODUCTION_READINESS_V2_ID = 'harness.production-readiness.v2';
export const PRODUCTION_READINESS_V1_ID = 'harness.production-readiness.v1';

/** The 13 canonical layers (CONTRACT section 6); each must appear exactly once. */
export const PRODUCTION_LAYERS = [
  'frontend',
  'backend-api-logic',
  'database-storage',
  'auth-permissions-rls',
  'hosting-deployment',
  'cloud-compute',
  'cicd-version-control',
  'security',
  'rate-limiting',
  'caching-cdn',
  'load-balancing-scaling',
  'error-tracking-logs-observability',
  'availability-recovery-dr',
] as const;
export type ProductionLayer = (typeof PRODUCTION_LAYERS)[number];

const Layer = Type.Enum(PRODUCTION_LAYERS);

/**
 * v2 layer: `required` layers carry a status and at least one control; a `waived` status names the
 * waiver (correlated with a human-granted approval on commissioned runs); `not-applicable` layers
 * carry the reason instead.
 */
export const LayerAssessmentV2 = Type.Object(
  {
    layer: Layer,
    owner: Text('accountable owner', 200),
    applicability: Type.Union([Type.Literal('required'), Type.Literal('not-applicable')]),
    reason: Type.Optional(Text('why the layer does not apply')),
    status: Type.Union([
      Type.Literal('passed'),
      Type.Literal('failed'),
      Type.Literal('pending'),
      Type.Literal('waived'),
      Type.Literal('not-applicable'),
    ]),
    waiverId: Type.Optional(Identifier),
    controls: Type.Array(Text('a control in place', 1000), { maxItems: 100 }),
  },
  { additionalProperties: false },
);

export const ProductionReadinessV2Schema = Type.Object(
  {
    schema: Type.Literal(PRODUCTION_READINESS_V2_ID),
    runId: RunIdString,
    generatedAt: DateTime,
    layers: Type.Array(LayerAssessmentV2, { minItems: 1, maxItems: 64 }),
  },
  { additionalProperties: false, $id: PRODUCTION_READINESS_V2_ID, title: PRODUCTION_READINESS_V2_ID },
);
export type ProductionReadinessV2 = Static<typeof ProductionReadinessV2Schema>;

/** Legacy v1: readable history; no run binding, free-form status per layer. */
export const ProductionReadinessV1Schema = Type.Object(
  {
    schema: Type.Literal(PRODUCTION_READINESS_V1_ID),
    generatedAt: Type.Optional(DateTime),
    layers: Type.Array(
      Type.Object(
        {
          layer: Layer,
          status: Type.Union([Type.Literal('pass'), Type.Literal('fail'), Type.Literal('n/a')]),
          notes: Type.Optional(Text('', 4096)),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 64 },
    ),
  },
  { additionalProperties: false, $id: PRODUCTION_READINESS_V1_ID, title: PRODUCTION_READINESS_V1_ID },
);
export type ProductionReadinessV1 = Static<typeof ProductionReadinessV1Schema>;
