import swagger from '@fastify/swagger';
import { TypeBoxValidatorCompiler } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyRequest, type FastifySchemaCompiler } from 'fastify';
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { BRIDGE_VERSION, CREATE_RUN_MAX_BYTES, EVENT_MAX_BYTES, SERVICE } from '../contract/index.js';
import type { BridgeContext } from './context.js';
import { browserDefence, requireAccessToken, requireJson, syncHook } from './guard.js';
import { credentialRedactor, installErrorHandlers } from './http-errors.js';
import { strictQuery } from './query.js';
import { registerEventRoute } from './routes/events.js';
import { registerHealthRoute } from './routes/health.js';
import { registerRunRoutes } from './routes/runs.js';

/**
 * TypeBox validation, except that route params (always strings) whose schema has only string
 * properties are checked as they are: the Value.Convert pass the provider runs first changes
 * nothing for them and was a measurable share of an event POST's CPU.
 */
const validatorCompiler: FastifySchemaCompiler<TSchema> = (route) => {
  const props = (route.schema as { type?: unknown; properties?: Record<string, { type?: unknown }> })
    .properties;
  if (
    route.httpPart === 'params' &&
    props !== undefined &&
    Object.values(props).every((p) => p.type === 'string')
  ) {
    const check = Compile(route.schema);
    return (value: unknown) => (check.Check(value) ? { value } : { error: check.Errors(value) as never });
  }
  return TypeBoxValidatorCompiler(route);
};

export interface AppOptions {
  logger?: boolean | object;
}

/**
 * The bridge's HTTP surface. Every request passes the browser defence (Host, Origin) and, except
 * the unauthenticated health probe, the access token check before its body is even parsed.
 */
export async function buildApp(ctx: BridgeContext, opts: AppOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: opts.logger ?? false,
    routerOptions: { maxParamLength: 256 },
    bodyLimit: Math.max(EVENT_MAX_BYTES, CREATE_RUN_MAX_BYTES),
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    return503OnClosing: true,
    forceCloseConnections: true,
  });
  app.setValidatorCompiler(validatorCompiler);
  // Response schemas document the API (OpenAPI); bodies are plain JSON so nothing is silently dropped.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  await app.register(swagger, {
    openapi: {
      info: { title: SERVICE, version: BRIDGE_VERSION, description: 'Local run bridge API' },
      components: {
        securitySchemes: {
          bridgeToken: { type: 'apiKey', in: 'header', name: 'x-harness-bridge-token' },
          humanToken: { type: 'apiKey', in: 'header', name: 'x-harness-human-token' },
        },
      },
    },
  });
  installErrorHandlers(
    app,
    credentialRedactor([ctx.env.accessToken, ctx.env.humanToken, ctx.env.integrityKey.toString('utf8')]),
  );
  const browserHeaders = browserDefence(() => ctx.port());
  const guardRequest = (req: FastifyRequest) => {
    browserHeaders(req);
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
  app.addHook('onRequest', syncHook(guardRequest));

  registerHealthRoute(app, ctx);
  registerRunRoutes(app, ctx);
  registerEventRoute(app, ctx);
  return app;
}
