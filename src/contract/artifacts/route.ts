import { type Static, Type } from '#typebox';
import { DateTime, Identifier, RunIdString, Text } from './common.js';

export const ROUTE_SCHEMA_ID = 'harness.route.v1';

export const WORK_TYPES = [
  'feature',
  'bug',
  'regression',
  'incident',
  'self-heal',
  'refactor',
  'chore',
  'docs',
  'research',
] as const;
/** Work types that are corrective: they need the full RCA and regression-proof chain. */
export const CORRECTIVE_WORK_TYPES: readonly string[] = ['bug', 'regression', 'incident', 'self-heal'];

/**
 * `harness.route.v1` (`run/route.json`): the validated route. Both the route and its goal carry
 * the run ID so a route written for one run cannot be replayed into another.
 */
export const RouteSchema = Type.Object(
  {
    schema: Type.Literal(ROUTE_SCHEMA_ID),
    routeId: Identifier,
    runId: RunIdString,
    generatedAt: DateTime,
    workType: Type.Enum(WORK_TYPES),
    lane: Type.Optional(Identifier),
    requiresRca: Type.Optional(Type.Boolean({ description: 'force the RCA chain for non-corrective work' })),
    goal: Type.Object(
      { goalId: Identifier, runId: RunIdString, statement: Text('what done means', 2000) },
      { additionalProperties: false },
    ),
    summary: Text('why this route', 2000),
  },
  { additionalProperties: false, $id: ROUTE_SCHEMA_ID, title: ROUTE_SCHEMA_ID },
);
export type Route = Static<typeof RouteSchema>;
