import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from '#typebox';
import { CURSOR_MAX, queryInteger, RUN_ID_PATTERN_SOURCE } from '../contract/limits.js';
import { isCanonicalRunIdInPath, runIdSegment } from '../contract/run-id-path.js';
import { UiError } from './errors.js';
import { sendUiError } from './guard.js';
import { fetchUpstream } from './upstream.js';

export interface ProxyOptions {
  bridgeUrl: URL;
  accessToken: string;
  timeoutMs: number;
  maxBytes: number;
}

/** A page size the proxy forwards: plain decimal digits, once. Range checks stay with the bridge. */
const Decimal = Type.Optional(Type.String({ pattern: '^[0-9]{1,9}$' }));
/**
 * A cursor: plain decimal digits, once, that the bridge would read as a cursor (any non-negative
 * safe integer, `queryInteger`); checked again in the handler, as the pattern cannot say it.
 */
const Cursor = Type.Optional(Type.String({ pattern: '^[0-9]+$' }));
const cursorsValid = (...values: (string | undefined)[]) =>
  values.every((v) => v === undefined || queryInteger(v) <= CURSOR_MAX);
const badCursor = (reply: FastifyReply) =>
  sendUiError(reply, new UiError('invalid_query', 'A cursor is not a non-negative safe integer'));
const ErrorEnvelope = Type.Object({
  ok: Type.Literal(false),
  error: Type.String(),
  message: Type.String(),
  problems: Type.Array(Type.String()),
});
/**
 * Upstream bodies are relayed as bytes (never re-serialized; health's success body is cut to its
 * public fields); error envelopes are the proxy's own.
 */
const errorResponses = { 400: ErrorEnvelope, 403: ErrorEnvelope, 502: ErrorEnvelope, 504: ErrorEnvelope };

/**
 * The fields of the bridge's public `GET /health` (CONTRACT 4). The proxy asks with its token, so a
 * wrong token still shows as 401, but the authenticated extras (dataDir and repoRoot, absolute
 * paths; the trust pin; figures) never reach the browser: CONTRACT 3, no absolute path in a
 * response. The web app reads nothing from health.
 */
const PUBLIC_HEALTH = ['ok', 'service', 'contractVersion', 'bridgeVersion', 'listenMode'] as const;

function publicHealth(body: Buffer): Buffer {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    parsed = null;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new UiError('bridge_bad_response', 'The bridge answered with something other than JSON');
  }
  const health = parsed as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const name of PUBLIC_HEALTH) if (Object.hasOwn(health, name)) out[name] = health[name];
  return Buffer.from(JSON.stringify(out));
}

/**
 * The only three routes that reach the bridge. Each builds its upstream path from a constant and,
 * for runs/:id, a run ID already matched against the canonical pattern and then percent-encoded,
 * so no browser input can steer the proxy to another bridge path. Query names outside the route's
 * list are dropped; the listed ones are re-encoded in a fixed order.
 */
export function registerProxyRoutes(parent: FastifyInstance, options: ProxyOptions): void {
  const app = parent.withTypeProvider<TypeBoxTypeProvider>();
  const origin = options.bridgeUrl.origin;

  const relay = async (
    reply: FastifyReply,
    path: string,
    query: Record<string, string | undefined>,
    successBody: (body: Buffer) => Buffer = (body) => body,
  ) => {
    const url = new URL(path, origin);
    for (const [name, value] of Object.entries(query))
      if (value !== undefined) url.searchParams.set(name, value);
    const closed = new AbortController();
    // A browser gone before the handler ran closed the response already: 'close' will not fire.
    if (reply.raw.closed) closed.abort();
    else reply.raw.once('close', () => closed.abort());
    try {
      const upstream = await fetchUpstream(url, { ...options, signal: closed.signal });
      const ok = upstream.status >= 200 && upstream.status < 300;
      const body = ok ? successBody(upstream.body) : upstream.body;
      return reply.code(upstream.status).headers(upstream.headers).send(body);
    } catch (err) {
      if (err instanceof UiError) return sendUiError(reply, err);
      throw err;
    }
  };

  app.get(
    '/api/bridge/health',
    { schema: { querystring: Type.Object({}), response: errorResponses } },
    (_request, reply) => relay(reply, '/health', {}, publicHealth),
  );
  app.get(
    '/api/bridge/runs',
    { schema: { querystring: Type.Object({ limit: Decimal, cursor: Cursor }), response: errorResponses } },
    async (request, reply) => {
      const { limit, cursor } = request.query;
      return cursorsValid(cursor) ? relay(reply, '/runs', { limit, cursor }) : badCursor(reply);
    },
  );
  const runRoute = '/api/bridge/runs/:id';
  const runIdAt = runIdSegment(runRoute);
  app.get(
    runRoute,
    {
      schema: {
        params: Type.Object({ id: Type.String({ pattern: RUN_ID_PATTERN_SOURCE }) }),
        querystring: Type.Object({ eventLimit: Decimal, eventCursor: Cursor }),
        response: { ...errorResponses, 404: ErrorEnvelope },
      },
    },
    async (request, reply) => {
      // The schema already checked the decoded ID; the upstream path must never depend on that
      // alone, and the ID must be canonical as the browser sent it: `/api/bridge/runs/%70` is not
      // run `p` (SPEC Run: never mapped onto another ID).
      if (!isCanonicalRunIdInPath(request.url, runIdAt, request.params.id)) {
        return sendUiError(reply, new UiError('invalid_run_id', 'The run ID is not canonical'));
      }
      if (!cursorsValid(request.query.eventCursor)) return badCursor(reply);
      return relay(reply, `/runs/${encodeURIComponent(request.params.id)}`, {
        eventLimit: request.query.eventLimit,
        eventCursor: request.query.eventCursor,
      });
    },
  );
}
