import type { FastifyInstance } from 'fastify';
import { Type } from '#typebox';
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
  VIEW_APPROVALS_MAX_BYTES,
  VIEW_PROBLEMS_MAX_BYTES,
  VIEW_TEXTS_MAX_BYTES,
} from '../../contract/index.js';
import type { BridgeContext } from '../context.js';
import { querySchema, strictQuery } from '../query.js';
import { errorResponses, GUARD_ERRORS, SECURITY } from '../route-docs.js';

const publicFields = {
  ok: Type.Literal(true),
  service: Type.String(),
  contractVersion: Type.String(),
  bridgeVersion: Type.String(),
  listenMode: Type.Literal('loopback'),
};
const count = Type.Integer({ minimum: 0 });
const positive = Type.Integer({ minimum: 1 });
const closed = <T extends Parameters<typeof Type.Object>[0]>(props: T) =>
  Type.Object(props, { additionalProperties: false });
const range = closed({ min: Type.Integer(), max: Type.Integer(), default: Type.Integer() });

/** The answer without a token (CONTRACT 4): these five fields and nothing else. */
export const PublicHealth = closed(publicFields);

/**
 * The answer to a valid token. Closed like the public one, so a field added to the handler without
 * its type here fails test/server/auth-tokens.test.ts instead of reaching the OpenAPI document untyped.
 */
export const AuthenticatedHealth = closed({
  ...publicFields,
  dataDir: Type.String(),
  repoRoot: Type.String(),
  port: count,
  nodeIds: Type.Array(Type.String()),
  defaultRequiredNodes: Type.Array(Type.String()),
  eventTypes: Type.Array(Type.String()),
  credentials: closed({
    integrityKey: Type.Literal('configured'),
    accessToken: Type.Literal('configured'),
    humanApprovalToken: Type.Literal('configured'),
    /** Optional: without it the bridge serves no export route. Its key ID, never the key. */
    exportKey: Type.Union([
      closed({ state: Type.Literal('configured'), keyId: Type.String() }),
      closed({ state: Type.Literal('not configured') }),
    ]),
  }),
  trustPin: Type.String(),
  repositoryAdapter: Type.Union(
    [
      closed({
        path: Type.String({ description: 'path in the repository, from the top level of its work tree' }),
        commit: Type.String(),
        sha256: Type.String(),
        finishLineAssurance: Type.Boolean(),
        requiredNodes: Type.Array(Type.String()),
      }),
      Type.Null(),
    ],
    {
      description:
        'the adapter committed at HEAD of the repository when the bridge started: every run that names none takes it, and no run may name a weaker one',
    },
  ),
  workers: closed({
    threads: count,
    queued: count,
    completed: count,
    configured: Type.Integer({
      minimum: 1,
      description: 'HARNESS_WORKERS: the pool runs at most this many threads, plus one kept for small files',
    }),
    busy: Type.Integer({ minimum: 0, description: 'threads running a task now' }),
  }),
  validators: closed({
    concurrency: Type.Integer({
      minimum: 1,
      description: 'HARNESS_VALIDATOR_CONCURRENCY: finish-line children at once',
    }),
    running: Type.Integer({ minimum: 0, description: 'finish-line children running now' }),
  }),
  queue: closed({ pending: count }),
  runs: count,
  storage: Type.Union([
    closed({ ok: Type.Literal(true) }),
    closed({ ok: Type.Literal(false), error: Type.String() }),
  ]),
  limits: closed({
    maxEventsPerRun: positive,
    eventMaxBytes: positive,
    responseMaxBytes: positive,
    viewTextsMaxBytes: positive,
    viewApprovalsMaxBytes: positive,
    viewProblemsMaxBytes: positive,
    runsLimit: range,
    eventsLimit: range,
    validatorConcurrency: positive,
    journalMaxBytes: positive,
    snapshotMaxBytes: positive,
    maxRuns: positive,
    approvalTextMaxBytes: positive,
    artifactMaxBytes: positive,
    rehashTimeoutMs: positive,
  }),
  cache: closed({ executions: count, hits: count }),
});

/** GET /health: liveness for anyone on loopback; operational detail only with a valid token. */
export function registerHealthRoute(app: FastifyInstance, ctx: BridgeContext): void {
  app.get(
    '/health',
    {
      schema: {
        summary: 'Liveness; with a valid token also paths, inventories, credential states and figures',
        security: SECURITY.optionalAccess,
        querystring: querySchema({}),
        response: {
          200: Type.Union([PublicHealth, AuthenticatedHealth]),
          // The guard's codes (a tokenless probe skips only the token check) and the empty query's.
          ...errorResponses([...GUARD_ERRORS, 'invalid_query']),
        },
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
      const { env, repositoryAdapter: repository } = ctx;
      return {
        ...base,
        dataDir: env.dataDir,
        repoRoot: env.repoRoot,
        port: ctx.port(),
        nodeIds: NODE_IDS,
        defaultRequiredNodes: repository?.requiredNodes ?? NODE_IDS,
        eventTypes: EVENT_TYPES,
        credentials: {
          integrityKey: 'configured',
          accessToken: 'configured',
          humanApprovalToken: 'configured',
          exportKey:
            env.exportKey === null
              ? { state: 'not configured' }
              : { state: 'configured', keyId: env.exportKey.keyId },
        },
        trustPin: env.trustPin,
        repositoryAdapter:
          repository?.record.committed === undefined
            ? null
            : {
                path: repository.record.committed.path,
                commit: repository.record.committed.commit,
                sha256: repository.record.sha256,
                finishLineAssurance: repository.record.finishLineAssurance,
                requiredNodes: repository.requiredNodes,
              },
        workers: { ...ctx.pool.figures, configured: env.workers, busy: ctx.pool.busy },
        validators: { concurrency: env.validatorConcurrency, running: ctx.metrics.validatorsRunning },
        queue: { pending: ctx.queue.pending },
        runs: ctx.store.size,
        storage: ctx.store.failure
          ? { ok: false, error: `storage failed: ${ctx.store.failure.message}; the bridge is stopping` }
          : { ok: true },
        limits: {
          maxEventsPerRun: env.maxEventsPerRun,
          eventMaxBytes: EVENT_MAX_BYTES,
          responseMaxBytes: RESPONSE_MAX_BYTES,
          viewTextsMaxBytes: VIEW_TEXTS_MAX_BYTES,
          viewApprovalsMaxBytes: VIEW_APPROVALS_MAX_BYTES,
          viewProblemsMaxBytes: VIEW_PROBLEMS_MAX_BYTES,
          runsLimit: RUNS_LIMIT,
          eventsLimit: EVENTS_LIMIT,
          validatorConcurrency: env.validatorConcurrency,
          ...ctx.store.ceilings,
          approvalTextMaxBytes: APPROVAL_TEXT_MAX_BYTES,
          artifactMaxBytes: env.artifactMaxBytes,
          rehashTimeoutMs: env.rehashTimeoutMs,
        },
        cache: { ...ctx.cache },
      };
    },
  );
}
