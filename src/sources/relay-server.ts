import { timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { Type } from '#typebox';
import { documentChecker } from '../contract/artifacts/check.js';
import { BridgeError, EVENT_MAX_BYTES, errorBody } from '../contract/index.js';
import { clientErrorHandlerWith } from '../server/client-error.js';
import { allowedHosts } from '../ui/guard.js';
import type { Outcome } from './relay-delivery.js';
import { type PageEvent, PageEventSchema, pageEvent } from './relay-event.js';

/** On every answer: JSON only, never cached, and which answer a browser gets depends on Origin. */
const HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
  vary: 'origin',
};

export interface RelayServerOptions {
  /** The capability in the write path, `/e/<capability>`: 32 random bytes, base64url. */
  capability: string;
  /** The only Origin values a request may carry (scheme://host[:port], exactly). */
  origins: ReadonlySet<string>;
  deliver: (event: PageEvent) => Promise<Outcome>;
}

/**
 * A request must arrive whole within this (a client holding a half-sent request is cut off, 408),
 * longer than a stop's budget so that a stop never waits on it (relay.ts closes what is left).
 */
export const REQUEST_MS = 15_000;
/**
 * A connection silent this long is closed, a request waiting for its answer included: a page's
 * event waits its turn at most 64 deep (relay-delivery.ts), and one cut off meanwhile is still
 * delivered or queued; its page may post it again with the same id.
 */
const SILENT_MS = 120_000;

/** A schema failure with every problem found (documentChecker), for the handler to report. */
class SchemaProblems extends Error {
  constructor(readonly problems: string[]) {
    super('the body does not match its schema');
  }
}

const same = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

function refuse(reply: FastifyReply, err: BridgeError): FastifyReply {
  return reply.code(err.status).headers(err.headers).type('application/json').send(errorBody(err));
}

/** What Fastify refused before the handler (the body's size, type or syntax), in the contract's codes. */
function frameworkRefusal(err: { code?: string; statusCode?: number }): BridgeError {
  if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || err.statusCode === 413)
    return new BridgeError('payload_too_large', `the body is larger than ${EVENT_MAX_BYTES} bytes`);
  if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
    return new BridgeError('unsupported_media_type', 'events must be sent as application/json');
  if (err.statusCode === 400) return new BridgeError('invalid_json', 'the body is not valid JSON');
  return new BridgeError('internal_error', 'internal error');
}

/**
 * The relay's HTTP surface (docs/sources.md, `harness browser-relay`): `POST /e/<capability>` and
 * its CORS preflight, nothing else. The capability is compared in constant time; a wrong one is
 * 404 like any other path. Origin must be exactly one of `origins`, or nothing is read of the body
 * and no CORS header is sent, so a page of another origin can neither post nor read an answer.
 */
export function buildRelayServer(options: RelayServerOptions): FastifyInstance {
  let hosts: Set<string> | null = null;
  const app = Fastify({
    logger: false,
    bodyLimit: EVENT_MAX_BYTES,
    exposeHeadRoutes: false,
    trustProxy: false,
    clientErrorHandler: clientErrorHandlerWith(HEADERS),
    requestTimeout: REQUEST_MS,
    connectionTimeout: SILENT_MS,
    // Node enforces these when it checks its connections: every second here, not every 30 s; the
    // headers' own limit (60 s by default) would outlast the request's.
    http: { requireHostHeader: false, connectionsCheckingInterval: 1000, headersTimeout: REQUEST_MS },
  });
  // JSON only: a text/plain POST (which a browser sends without a preflight) is 415.
  app.removeContentTypeParser('text/plain');
  app.setValidatorCompiler(({ schema }) => {
    const checker = documentChecker('relay', schema as never);
    return (value: unknown) => {
      const problems = checker.problems(value);
      return problems.length === 0 ? { value } : { error: new SchemaProblems(problems) };
    };
  });
  app.addHook('onRequest', async (request, reply) => {
    reply.headers(HEADERS);
    // DNS rebinding: a page whose own name points at 127.0.0.1 sends its own name as Host.
    hosts ??= allowedHosts('127.0.0.1', (app.server.address() as AddressInfo).port);
    if (!hosts.has((request.headers.host ?? '').toLowerCase()))
      return refuse(reply, new BridgeError('host_not_allowed', 'the Host header does not name this relay'));
    return undefined;
  });
  const admit = async (request: FastifyRequest, reply: FastifyReply) => {
    const { cap } = request.params as { cap: string };
    if (!same(cap, options.capability)) return refuse(reply, new BridgeError('not_found', 'No such route'));
    const origin = request.headers.origin;
    if (origin === undefined || !options.origins.has(origin))
      return refuse(reply, new BridgeError('origin_not_allowed', 'this Origin may not post to the relay'));
    reply.header('access-control-allow-origin', origin);
    return undefined;
  };
  const params = Type.Object({ cap: Type.String() });
  app.options('/e/:cap', { onRequest: admit, schema: { params } }, (_request, reply) =>
    reply
      .code(204)
      .header('access-control-allow-methods', 'POST')
      .header('access-control-allow-headers', 'content-type')
      .header('access-control-max-age', '600')
      .send(),
  );
  app.post(
    '/e/:cap',
    { onRequest: admit, attachValidation: true, schema: { params, body: PageEventSchema } },
    async (request, reply) => {
      const invalid = request.validationError;
      const schemaProblems = invalid instanceof SchemaProblems ? invalid.problems : [];
      const event = pageEvent(request.body, schemaProblems);
      if (event instanceof BridgeError) return refuse(reply, event);
      const outcome = await options.deliver(event);
      if (outcome.kind === 'queued') return reply.code(202).send({ ok: true, queued: true, id: event.id });
      if (outcome.kind === 'busy')
        return refuse(reply, new BridgeError('bridge_busy', outcome.why, [], { 'retry-after': '1' }));
      return reply.code(outcome.status).send(pageAnswer(outcome.body, event.id));
    },
  );
  app.setNotFoundHandler((_request, reply) => refuse(reply, new BridgeError('not_found', 'No such route')));
  app.setErrorHandler((err, _request, reply) =>
    refuse(reply, frameworkRefusal(err as { code?: string; statusCode?: number })),
  );
  return app;
}

/**
 * What the page learns of the bridge's answer: the seq it stored, or that it refused and why in one
 * line; not the run's summary, and never the refusal's problems, which may describe what the run
 * holds (a stored event's fields for an id conflict, the finish line's gates for run.completed).
 */
function pageAnswer(body: Record<string, unknown>, id: string): Record<string, unknown> {
  if (body['ok'] === true)
    return { ok: true, id, seq: body['seq'], ...(body['duplicate'] === true ? { duplicate: true } : {}) };
  return { ok: false, error: body['error'], message: body['message'] };
}
