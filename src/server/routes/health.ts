import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import {
  APPROVAL_TEXT_MAX_BYTES,
  BRIDGE_VERSION,
  CONTRACT_VERSION,
  EVENT_MAX_BYTES,
  EVENT_TYPES,
  EVENTS_LIMIT,
  NODE_IDS,
  RESPONSE_MAX_BYTES,
  RUNS_LIMIT,
  SERVICE,
  VIEW_TEXTS_MAX_BYTES,
} from '../../contract/index.js';
import type { BridgeContext } from '../context.js';
import { strictQuery } from '../query.js';

const PublicHealth = Type.Object({
  ok: Type.Literal(true),
  service: Type.String(),
  contractVersion: Type.String(),
  bridgeVersion: Type.String(),
  listenMode: Type.Literal('loopback'),
});

/** GET /health: liveness for anyone on loopback; operational detail only with a valid token. */
export function registerHealthRoute(app: FastifyInstance, ctx: BridgeContext): void {
  app.get(
    '/health',
    {
      schema: {
        summary: 'Liveness; with a valid token also paths, inventories, credential states and figures',
        querystring: Type.Object({}, { additionalProperties: false }),
        response: { 200: Type.Intersect([PublicHealth, Type.Record(Type.String(), Type.Unknown())]) },
      },
    },
    async (req) => {
      strictQuery(req.url, {});
      const base = {
        ok: true as const,
        service: SERVICE,
        contractVersion: CONTRACT_VERSION,
        bridgeVersion: BRIDGE_VERSION,
        listenMode: 'loopback' as const,
      };
      if (req.headers['x-harness-bridge-token'] === undefined) return base;
      const { env } = ctx;
      return {
        ...base,
        dataDir: env.dataDir,
        repoRoot: env.repoRoot,
        port: ctx.port(),
        nodeIds: NODE_IDS,
        defaultRequiredNodes: NODE_IDS,
        eventTypes: EVENT_TYPES,
        credentials: {
          integrityKey: 'configured',
          accessToken: 'configured',
          humanApprovalToken: 'configured',
        },
        trustPin: env.trustPin,
        workers: ctx.pool.figures,
        queue: { pending: ctx.queue.pending },
        runs: ctx.store.size,
        storage: ctx.store.failure
          ? { ok: false, error: `commit log failed: ${ctx.store.failure.message}; restart the bridge` }
          : { ok: true },
        limits: {
          maxEventsPerRun: env.maxEventsPerRun,
          eventMaxBytes: EVENT_MAX_BYTES,
          responseMaxBytes: RESPONSE_MAX_BYTES,
          viewTextsMaxBytes: VIEW_TEXTS_MAX_BYTES,
          runsLimit: RUNS_LIMIT,
          eventsLimit: EVENTS_LIMIT,
          validatorConcurrency: env.validatorConcurrency,
          ...ctx.store.ceilings,
          approvalTextMaxBytes: APPROVAL_TEXT_MAX_BYTES,
        },
        cache: { ...ctx.cache },
      };
    },
  );
}
