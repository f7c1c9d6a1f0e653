import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ErrorCode } from '../contract/index.js';

/** HARNESS_LOG_LEVEL's values, most severe first (pino's levels). */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Where log lines go: pino writes each line whole with one call. */
export interface LogDestination {
  write(line: string): unknown;
}

const WITHHELD = '[withheld]';

/**
 * The bridge's pino options (Fastify's logger). A client chooses run IDs, event IDs and paths, so
 * a credential can reach a log line inside any field, and a request's headers carry two of them:
 * the x-harness-* token headers are redacted by path, and every line is scrubbed of each
 * credential's value (as it is and as JSON escapes it) before it is written, whatever field holds
 * it. Fastify's own two lines per request are off; `logRequests` writes one.
 */
export function loggerOptions(level: LogLevel, secrets: readonly string[], destination: LogDestination) {
  const needles = [...new Set(secrets.flatMap((s) => [s, JSON.stringify(s).slice(1, -1)]))].filter(
    (s) => s.length > 0,
  );
  const stream = {
    write(line: string) {
      let out = line;
      for (const needle of needles) if (out.includes(needle)) out = out.split(needle).join(WITHHELD);
      destination.write(out);
    },
  };
  const headers = ['x-harness-bridge-token', 'x-harness-human-token', 'authorization', 'cookie'];
  return {
    level,
    stream,
    redact: {
      paths: headers.flatMap((h) => [`req.headers["${h}"]`, `headers["${h}"]`]),
      censor: WITHHELD,
    },
  };
}

/** The contract code each refused request was answered with, for its log line. */
const refusals = new WeakMap<FastifyRequest, ErrorCode>();

export function noteRefusal(req: FastifyRequest, code: ErrorCode): void {
  refusals.set(req, code);
}

const EVENT_ROUTE = '/runs/:id/events';

/**
 * One JSON line per request at `info`: method, route (the template, never the raw URL, which a
 * client may have percent-encoded), status, time, and the run ID, event ID and error code where
 * they apply. Installed only when `info` is enabled, so a quieter bridge pays for no hook.
 */
export function logRequests(app: FastifyInstance, redact: (text: string) => string): void {
  if (!['info', 'debug', 'trace'].includes(app.log.level)) return;
  app.addHook('onResponse', (req, reply, done) => {
    const route = req.routeOptions.url ?? null;
    const runId = (req.params as { id?: unknown } | undefined)?.id;
    const body = req.body as { id?: unknown } | undefined;
    const eventId = route === EVENT_ROUTE && typeof body?.id === 'string' ? body.id : undefined;
    const code = refusals.get(req);
    req.log.info(
      {
        method: req.method,
        route,
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 100) / 100,
        // Client-chosen: one sharing a run of characters with a credential is withheld whole.
        ...(typeof runId === 'string' ? { runId: redact(runId) } : {}),
        ...(eventId === undefined ? {} : { eventId: redact(eventId) }),
        ...(code === undefined ? {} : { code }),
      },
      'request',
    );
    done();
  });
}
