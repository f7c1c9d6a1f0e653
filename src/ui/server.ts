import type { AddressInfo, Socket } from 'node:net';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import { clientErrorHandlerWith, writeClosingAnswer } from '../server/client-error.js';
import { PROXY_MAX_BYTES, type UiConfig } from './config.js';
import { UiError } from './errors.js';
import {
  APP_ROUTE,
  allowedHosts,
  checkBrowserRequest,
  isAppRoute,
  SECURITY_HEADERS,
  sendUiError,
} from './guard.js';
import { registerProxyRoutes } from './proxy-routes.js';
import { defaultWebRoot, loadStaticFiles } from './static.js';

export interface UiServerOptions extends Omit<UiConfig, 'port'> {
  /** Directory of the built web app; defaults to dist/ui at the package root. */
  webRoot?: string;
  /** Override of the 2 MiB upstream byte cap (tests use a small one). */
  maxBytes?: number;
  logger?: FastifyServerOptions['logger'];
}

/**
 * What an answer written straight to the socket carries (a request Node's parser refused, a
 * CONNECT): no hook runs for those, so they get the headers every other error answer gets here.
 */
const CLOSING_HEADERS: Readonly<Record<string, string>> = {
  ...SECURITY_HEADERS,
  'cache-control': 'no-store',
};

const NOT_BUILT = 'The web app is not built: run `npm run build`. The /api/bridge proxy still works.\n';

/**
 * The UI server: the built web app plus the read-only /api/bridge proxy. Call `listen` on the
 * result; the Host check learns the port from the bound address, so port 0 works.
 */
export async function buildUiServer(options: UiServerOptions): Promise<FastifyInstance> {
  let hosts: Set<string> | null = null;
  /** What every request is judged on first: Host, Origin and fetch metadata, then the method. */
  const refusalOf = (request: FastifyRequest): UiError | null => {
    if (hosts === null) {
      const address = app.server.address() as AddressInfo | null;
      if (address === null) return new UiError('host_not_allowed', 'Not listening');
      hosts = allowedHosts(options.host, address.port);
    }
    const refused = checkBrowserRequest(request, hosts);
    if (refused) return refused;
    if (request.method !== 'GET') return new UiError('method_not_allowed', 'The UI server is read-only');
    return null;
  };
  const app = Fastify({
    logger: options.logger ?? false,
    // HEAD would reach the proxy as an upstream GET; the UI is GET-only.
    exposeHeadRoutes: false,
    bodyLimit: 1024,
    // Canonical run IDs reach 128 characters; find-my-way's default of 100 would 404 the longest.
    routerOptions: { maxParamLength: 256 },
    // Never trust X-Forwarded-*: this server is only ever reached directly over loopback.
    trustProxy: false,
    clientErrorHandler: clientErrorHandlerWith(CLOSING_HEADERS),
    // A request that reaches the server while it closes (pipelined behind one still being proxied)
    // is answered as any other, with the security headers and `connection: close`, not with
    // Fastify's own 503 body, which carries neither.
    return503OnClosing: false,
    // A request without Host is refused by the Host check, in the envelope, not by Node.
    http: { requireHostHeader: false },
    // A path the router cannot take apart (bad percent-encoding, a run ID segment past
    // maxParamLength) is answered before any hook: it is judged as every request is, then refused
    // in the UI's envelope without its path echoed.
    frameworkErrors: (_err, request, reply) => {
      const refused =
        refusalOf(request) ??
        (request.url.startsWith('/api/bridge/runs/')
          ? new UiError('invalid_run_id', 'The run ID is not canonical')
          : new UiError('not_found', 'No such route'));
      reply.headers(SECURITY_HEADERS).header('cache-control', 'no-store');
      return sendUiError(reply as FastifyReply, refused);
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  // Node hands CONNECT to this event and, with no listener, closes the connection unanswered.
  app.server.on('connect', (_req, socket: Socket) => {
    const refused = new UiError('method_not_allowed', 'The UI server is read-only');
    writeClosingAnswer(socket, refused.status, refused.body(), { ...CLOSING_HEADERS, allow: 'GET' });
  });
  app.addHook('onRequest', async (request, reply) => {
    const refused = refusalOf(request);
    return refused ? sendUiError(reply, refused) : undefined;
  });
  app.addHook('onSend', async (request, reply, payload) => {
    reply.headers(SECURITY_HEADERS);
    // Keyed on the matched route: an encoded spelling of /api/ reaches the proxy all the same. Only
    // a static file of the build may be cached; an error answered on the app route never is.
    if (!isAppRoute(request) || reply.statusCode !== 200) reply.header('cache-control', 'no-store');
    return payload;
  });

  app.setErrorHandler((err, request, reply) => {
    if (request.method !== 'GET') {
      return sendUiError(reply, new UiError('method_not_allowed', 'The UI server is read-only'));
    }
    const validation = (err as { validationContext?: string }).validationContext;
    if (validation === 'params') {
      return sendUiError(reply, new UiError('invalid_run_id', 'The run ID is not canonical'));
    }
    if (validation === 'querystring') {
      return sendUiError(reply, new UiError('invalid_query', 'A query parameter is repeated or not decimal'));
    }
    request.log.error({ err }, 'ui server error');
    return sendUiError(reply, new UiError('internal_error', 'Unexpected failure'));
  });
  app.setNotFoundHandler((request, reply) => {
    const method = request.method === 'GET' ? null : 'method_not_allowed';
    sendUiError(
      reply,
      new UiError(method ?? 'not_found', method ? 'The UI server is read-only' : 'No such route'),
    );
  });

  registerProxyRoutes(app as unknown as FastifyInstance, {
    bridgeUrl: options.bridgeUrl,
    accessToken: options.accessToken,
    timeoutMs: options.timeoutMs,
    maxBytes: options.maxBytes ?? PROXY_MAX_BYTES,
  });

  // Writes never match a route: the catch-all answers 405 for every other method on every path.
  app.route({
    method: ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'],
    url: '/*',
    handler: (_request, reply) =>
      sendUiError(reply, new UiError('method_not_allowed', 'The UI server is read-only')),
  });

  const files = loadStaticFiles(options.webRoot ?? defaultWebRoot());
  if (files.size === 0) (app.log as FastifyBaseLogger).warn(NOT_BUILT.trim());
  app.get(APP_ROUTE, (request, reply) => {
    const path = request.url.split('?')[0] ?? '/';
    const file = files.get(path === '/' ? '/index.html' : path);
    if (path === '/' && file === undefined)
      return reply.code(503).type('text/plain; charset=utf-8').send(NOT_BUILT);
    if (file === undefined) return sendUiError(reply, new UiError('not_found', 'No such route'));
    reply.header('cache-control', file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
    return reply.type(file.type).send(file.body);
  });
  return app;
}
