import type { FastifyInstance } from 'fastify';
import { Type } from '#typebox';
import type { BridgeContext } from '../context.js';
import { querySchema, strictQuery } from '../query.js';
import { errorResponses, GUARD_ERRORS, SECURITY } from '../route-docs.js';

/**
 * GET /metrics: Prometheus text exposition (docs/operations.md "Metrics"), behind the access token
 * like every read but the tokenless health probe (the guard in app.ts refuses it first). A scrape
 * reads counters and histograms as they stand and the gauges' current figures: its cost does not
 * grow with the events or runs the bridge has seen.
 */
export function registerMetricsRoute(app: FastifyInstance, ctx: BridgeContext): void {
  app.get(
    '/metrics',
    {
      schema: {
        summary: 'Prometheus metrics: events, queues, the hash pool, validator children, caches, quarantines',
        security: SECURITY.access,
        querystring: querySchema({}),
        response: {
          200: {
            description: 'The Prometheus text exposition format, version 0.0.4',
            content: { 'text/plain': { schema: Type.String() } },
          },
          ...errorResponses([...GUARD_ERRORS, 'invalid_query']),
        },
      },
    },
    async (req, reply) => {
      strictQuery(req.url, {});
      const text = await ctx.metrics.text();
      void reply.type(ctx.metrics.contentType);
      return text;
    },
  );
}
