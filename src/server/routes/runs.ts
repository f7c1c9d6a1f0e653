import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from '#typebox';
import { RunBundleSchema } from '../../contract/bundle.js';
import {
  BridgeError,
  CREATE_RUN_MAX_BYTES,
  type CreateRunBody,
  CreateRunSchema,
  type ErrorCode,
  EVENTS_LIMIT,
  QuarantinedRunReadView,
  RUN_ID_PATTERN,
  RUN_ID_PATTERN_SOURCE,
  RUNS_LIMIT,
  RunReadView,
  RunSummaryView,
  RunView,
} from '../../contract/index.js';
import { isCanonicalRunIdInPath, runIdSegment } from '../../contract/run-id-path.js';
import { completionPreview } from '../completion.js';
import type { BridgeContext } from '../context.js';
import { createRun } from '../create-run.js';
import { exportRun } from '../export.js';
import { checkBodyForCredentials, checkRunIdForCredentials, syncHook } from '../guard.js';
import { CURSOR_MAX, type QuerySpec, querySchema, strictQuery } from '../query.js';
import { getRun, listRuns, pagedAnswerDoc, pageHeaders } from '../read-runs.js';
import { bodyLimitDoc, errorResponses, GUARD_ERRORS, SECURITY, WRITE_ERRORS } from '../route-docs.js';
import { runView } from '../views.js';

export const RunParams = Type.Object({ id: Type.String({ pattern: RUN_ID_PATTERN_SOURCE }) });

/**
 * The check of a route's run ID as it was sent: canonical before decoding, not only after
 * (`/runs/%70` is not run `p`), or 400 `invalid_run_id` before the run is looked up or anything
 * is stored.
 */
export function pathRunIdCheck(route: string): (req: FastifyRequest) => void {
  const segment = runIdSegment(route);
  return (req) => {
    const { id } = req.params as { id?: unknown };
    if (typeof id !== 'string' || !isCanonicalRunIdInPath(req.url, segment, id))
      throw new BridgeError('invalid_run_id', 'the run ID is not canonical');
  };
}

/**
 * The pre-validation of a read route with a run ID in its path: a credential in the ID is refused
 * as such, then the ID must be canonical as sent (pathRunIdCheck).
 */
function runIdInPath(route: string, bodySecrets: ReturnType<typeof secrets>) {
  const checkPathRunId = pathRunIdCheck(route);
  return syncHook((req) => {
    checkRunIdForCredentials((req.params as { id?: unknown }).id, bodySecrets);
    checkPathRunId(req);
  });
}

/** The 2xx bodies of the run routes (exported so a test holds real answers to them). */
export const CreatedRun = Type.Object({ ok: Type.Literal(true), created: Type.Boolean(), run: RunView });
export const RunsPage = Type.Object({ ok: Type.Literal(true), runs: Type.Array(RunSummaryView) });
/** CONTRACT 4: exactly `{ok, run}`; the event page sits inside `run`. */
export const RunRead = Type.Object(
  { ok: Type.Literal(true), run: Type.Union([RunReadView, QuarantinedRunReadView]) },
  { additionalProperties: false },
);

const RUNS_QUERY = {
  limit: { ...RUNS_LIMIT, description: 'Runs in the page.' },
  cursor: {
    min: 0,
    max: CURSOR_MAX,
    default: 0,
    description: 'Offset of the first run, in creation order (x-harness-next-cursor names the next page).',
  },
} satisfies QuerySpec;
const RUN_QUERY = {
  eventLimit: { ...EVENTS_LIMIT, description: 'Events in the page.' },
  eventCursor: {
    min: 0,
    max: CURSOR_MAX,
    description: 'Offset of the first event in journal order; without it, the newest page.',
  },
} satisfies QuerySpec;

const EXPORT_QUERY = {
  withArtifacts: {
    min: 0,
    max: 1,
    default: 0,
    description: "1: the bundle holds the claimed artifacts' bytes (base64), each checked against its claim.",
  },
} satisfies QuerySpec;

/**
 * The codes each route can answer with beyond its 2xx (route-docs.ts builds its error responses):
 * the guard's, and those its own steps throw. Once a commit-log write or sync failed, the bridge
 * is stopping: every run read and write is `bridge_busy` until it exits.
 */
const CREATE_ERRORS = [
  ...GUARD_ERRORS,
  ...WRITE_ERRORS,
  'client_supplied_human_token_rejected',
  'invalid_run_id',
  'run_creation_contract_violation',
  'artifact_verification_failed',
  'adapter_policy_violation',
  'run_already_exists',
  'run_quarantined',
  'run_history_full',
  'internal_error',
] as const satisfies readonly ErrorCode[];
const LIST_ERRORS = [
  ...GUARD_ERRORS,
  'invalid_query',
  'internal_error',
] as const satisfies readonly ErrorCode[];
const READ_ERRORS = [
  ...GUARD_ERRORS,
  'client_supplied_human_token_rejected',
  'invalid_run_id',
  'invalid_query',
  'run_not_found',
  'internal_error',
] as const satisfies readonly ErrorCode[];
const EXPORT_ERRORS = [
  ...READ_ERRORS,
  'payload_too_large',
  'artifact_verification_failed',
] as const satisfies readonly ErrorCode[];

/**
 * SPEC Run: a non-canonical ID is refused as one, wherever it is given. A string `id` in the
 * POST /runs body that is not canonical is 400 `invalid_run_id`, as the same ID in a path is; a
 * missing or non-string `id` is a body that breaks its contract. The ID is not echoed.
 */
function checkCreateRunId(body: unknown): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
  const id = (body as { id?: unknown }).id;
  if (typeof id === 'string' && !RUN_ID_PATTERN.test(id)) {
    throw new BridgeError('invalid_run_id', 'the run ID is not canonical', [
      `id must match ${RUN_ID_PATTERN_SOURCE}`,
    ]);
  }
}

/** The credential values a body must not carry (computed once per app: the key is a Buffer). */
export function secrets(ctx: BridgeContext) {
  const exportKey = ctx.env.exportKey ? [ctx.env.exportKey.text] : [];
  return {
    human: ctx.env.humanToken,
    others: [ctx.env.accessToken, ctx.env.integrityKey.toString('utf8'), ...exportKey],
  };
}

export function registerRunRoutes(app: FastifyInstance, ctx: BridgeContext): void {
  const bodySecrets = secrets(ctx);
  app.post(
    '/runs',
    {
      bodyLimit: CREATE_RUN_MAX_BYTES,
      config: { bodyErrorCode: 'run_creation_contract_violation' satisfies ErrorCode },
      schema: {
        summary: 'Create or sync a run',
        ...bodyLimitDoc(CREATE_RUN_MAX_BYTES),
        security: SECURITY.access,
        body: CreateRunSchema,
        response: { 200: CreatedRun, 201: CreatedRun, ...errorResponses(CREATE_ERRORS) },
      },
      preValidation: async (req) => {
        checkBodyForCredentials(req.body, bodySecrets);
        checkCreateRunId(req.body);
      },
    },
    async (req, reply) => {
      const body = req.body as CreateRunBody;
      return ctx.queue.run(body.id, async () => {
        const { created, run } = await createRun(ctx, body);
        try {
          const view = runView(run, completionPreview(run), ctx.store.quarantineOf(run.runId));
          void reply.code(created ? 201 : 200);
          return { ok: true, created, run: view };
        } finally {
          ctx.store.release(run);
        }
      });
    },
  );

  app.get(
    '/runs',
    {
      schema: {
        summary: 'Event-free run summaries in creation order',
        security: SECURITY.access,
        querystring: querySchema(RUNS_QUERY),
        response: {
          200: pagedAnswerDoc('One page of run summaries', RunsPage, RUNS_LIMIT),
          ...errorResponses(LIST_ERRORS),
        },
      },
    },
    async (req, reply) => {
      const q = strictQuery(req.url, RUNS_QUERY);
      const { runs, page } = await listRuns(
        ctx,
        q['cursor'] ?? RUNS_QUERY.cursor.default,
        q['limit'] ?? RUNS_QUERY.limit.default,
      );
      void reply.headers(pageHeaders(page));
      return { ok: true, runs };
    },
  );

  const route = '/runs/:id';
  app.get(
    route,
    {
      preValidation: runIdInPath(route, bodySecrets),
      schema: {
        summary: 'A run with one page of its events',
        security: SECURITY.access,
        params: RunParams,
        querystring: querySchema(RUN_QUERY),
        response: {
          200: pagedAnswerDoc(
            'The run, with one page of its events in `run.events` and `run.eventPage`',
            RunRead,
            EVENTS_LIMIT,
          ),
          ...errorResponses(READ_ERRORS),
        },
      },
    },
    async (req, reply) => {
      const q = strictQuery(req.url, RUN_QUERY);
      const { id } = req.params as { id: string };
      const { body, page } = await ctx.queue.run(id, () =>
        getRun(ctx, id, q['eventLimit'] ?? RUN_QUERY.eventLimit.default, q['eventCursor']),
      );
      void reply.headers(pageHeaders(page));
      return body;
    },
  );
}

/**
 * GET /runs/:id/export, on a bridge that holds an export key (HARNESS_BRIDGE_EXPORT_KEY); without
 * one there is no such route (404 `not_found`), as on a bridge older than the route.
 */
export function registerExportRoute(app: FastifyInstance, ctx: BridgeContext): void {
  const bodySecrets = secrets(ctx);
  const exportRoute = '/runs/:id/export';
  app.get(
    exportRoute,
    {
      preValidation: runIdInPath(exportRoute, bodySecrets),
      schema: {
        summary: "The run's bundle, signed with the bridge's export key (docs/sources.md)",
        security: SECURITY.access,
        params: RunParams,
        querystring: querySchema(EXPORT_QUERY),
        response: { 200: RunBundleSchema, ...errorResponses(EXPORT_ERRORS) },
      },
    },
    async (req, reply) => {
      const q = strictQuery(req.url, EXPORT_QUERY);
      const { id } = req.params as { id: string };
      const text = await ctx.queue.run(id, () => exportRun(ctx, id, q['withArtifacts'] === 1));
      // The bundle's exact bytes (canonical JSON), sent as they were signed.
      void reply.type('application/json; charset=utf-8');
      return text;
    },
  );
}
