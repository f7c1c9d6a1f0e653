import type { Socket } from 'node:net';
import swagger from '@fastify/swagger';
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifySchemaCompiler,
  LogController,
} from 'fastify';
import type { TSchema } from '#typebox';
import { Compile } from '#typebox/compile';
import { Value } from '#typebox/value';
import {
  BRIDGE_VERSION,
  BridgeError,
  CREATE_RUN_MAX_BYTES,
  EVENT_MAX_BYTES,
  errorBody,
  SERVICE,
} from '../contract/index.js';
import { clientErrorHandler, writeClosingAnswer } from './client-error.js';
import type { BridgeContext } from './context.js';
import { browserDefence, requireAccessToken, requireJson, syncHook } from './guard.js';
import { credentialRedactor, installErrorHandlers, toBridgeError } from './http-errors.js';
import { logRequests, noteRefusal } from './logging.js';
import { strictQuery } from './query.js';
import { apiDescription, SECURITY_SCHEMES } from './route-docs.js';
import { registerEventRoute } from './routes/events.js';
import { registerHealthRoute } from './routes/health.js';
import { registerMetricsRoute } from './routes/metrics.js';
import { registerExportRoute, registerRunRoutes } from './routes/runs.js';
import { shuttingDown } from './run-queue.js';

/**
 * TypeBox validation, as @fastify/type-provider-typebox's TypeBoxValidatorCompiler does it (a body
 * is checked as sent; other parts are first converted with Value.Convert, since query strings and
 * params arrive as strings), but with the bundled TypeBox (`#typebox`) rather than the package's
 * 700 modules. Route params whose schema has only string properties are checked as they are: the
 * conversion changes nothing for them and was a measurable share of an event POST's CPU. A query
 * is judged by strictQuery alone, on the raw URL (Fastify's parsed query folds repeats); the
 * route's querystring schema, built from the same spec, documents it.
 */
const validatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  if (httpPart === 'querystring') return (value: unknown) => ({ value });
  const check = Compile(schema);
  const props = (schema as { properties?: Record<string, { type?: unknown }> }).properties;
  const convert =
    httpPart !== 'body' &&
    !(httpPart === 'params' && props !== undefined && Object.values(props).every((p) => p.type === 'string'));
  return (value: unknown) => {
    const converted = convert ? Value.Convert(schema, value) : value;
    return check.Check(converted) ? { value: converted } : { error: check.Errors(converted) as never };
  };
};

export interface AppOptions {
  logger?: boolean | object;
}

/**
 * The bridge's HTTP surface. Every request passes the browser defence (Host, Origin) and, except
 * the unauthenticated health probe, the access token check before its body is even parsed.
 */
export async function buildApp(ctx: BridgeContext, opts: AppOptions = {}): Promise<FastifyInstance> {
  const browserHeaders = browserDefence(() => ctx.port());
  const guardRequest = (req: FastifyRequest) => {
    browserHeaders(req);
    if (ctx.queue.closed) throw shuttingDown();
    // The raw path, not req.routeOptions (a fresh object per access on the hot path). A spelling
    // that routes to /health but differs from it (percent-encoded) only ever needs the token.
    const isHealth = req.url === '/health' || req.url.startsWith('/health?');
    if (!isHealth || req.headers['x-harness-bridge-token'] !== undefined)
      requireAccessToken(req, ctx.env.accessToken);
    if (req.method === 'POST') {
      requireJson(req);
      // Writes take no query parameters: an unknown one fails closed (SPEC Endpoints 5).
      strictQuery(req.url, {});
    }
  };
  const redact = credentialRedactor([
    ctx.env.accessToken,
    ctx.env.humanToken,
    ctx.env.integrityKey.toString('utf8'),
  ]);
  const app = Fastify({
    logger: opts.logger ?? false,
    // One line per request, written by logRequests (logging.ts), instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    routerOptions: { maxParamLength: 256 },
    bodyLimit: Math.max(EVENT_MAX_BYTES, CREATE_RUN_MAX_BYTES),
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    // Requests reaching a closing bridge are refused by guardRequest, in the envelope (Fastify's
    // own 503 body is not the contract's).
    return503OnClosing: false,
    forceCloseConnections: true,
    clientErrorHandler,
    // A request without Host is refused by the browser defence (403 host_not_allowed, in the
    // envelope) rather than by Node with an empty 400.
    http: { requireHostHeader: false },
    // A path the router cannot take apart (bad percent-encoding, a run ID segment past
    // maxParamLength) is answered here, before any hook: the request is still judged as every
    // other one is (Host, Origin, token), then refused in the envelope without its path echoed.
    frameworkErrors: (err, req, reply) => {
      let refusal: BridgeError;
      try {
        guardRequest(req);
        refusal = req.url.startsWith('/runs/')
          ? new BridgeError('invalid_run_id', 'the run ID is not canonical')
          : new BridgeError('not_found', 'no such route');
      } catch (guardErr) {
        refusal = toBridgeError(guardErr as FastifyError, 'event_contract_violation');
      }
      if (refusal.code === 'internal_error') req.log.error({ err }, 'unhandled router error');
      void (reply as FastifyReply).code(refusal.status).headers(refusal.headers).send(errorBody(refusal));
    },
  });
  // Node hands CONNECT to this event and, with no listener, closes the connection unanswered.
  app.server.on('connect', (_req, socket: Socket) => {
    writeClosingAnswer(socket, 404, errorBody(new BridgeError('not_found', 'no such route')));
  });
  app.setValidatorCompiler(validatorCompiler);
  // Response schemas document the API (OpenAPI); bodies are plain JSON so nothing is silently dropped.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  await app.register(swagger, {
    openapi: {
      info: { title: SERVICE, version: BRIDGE_VERSION, description: apiDescription() },
      components: { securitySchemes: SECURITY_SCHEMES },
    },
  });
  installErrorHandlers(app, redact, (req, code) => {
    noteRefusal(req, code);
    ctx.metrics.refusal(code, req.method === 'POST' && req.routeOptions.url === '/runs/:id/events');
  });
  app.addHook('onRequest', syncHook(guardRequest));
  logRequests(app, redact);

  registerHealthRoute(app, ctx);
  registerMetricsRoute(app, ctx);
  registerRunRoutes(app, ctx);
  if (ctx.env.exportKey) registerExportRoute(app, ctx);
  registerEventRoute(app, ctx);
  return app;
}
