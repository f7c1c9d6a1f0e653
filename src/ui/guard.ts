import type { FastifyReply, FastifyRequest } from 'fastify';
import { UiError } from './errors.js';

/** Headers on every response: no framing, no sniffing, no referrer leaks, same-origin only. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

/** The Host values a browser uses to reach this server; computed once the port is known. */
export function allowedHosts(host: string, port: number): Set<string> {
  const bracketed = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return new Set([`${bracketed}:${port}`.toLowerCase(), `localhost:${port}`]);
}

/** The route of the web app's files (server.ts); every other GET route is the API proxy. */
export const APP_ROUTE = '/*';

/**
 * Whether the request was routed to the web app's files. The router percent-decodes the path
 * (`/%61pi/bridge/runs` reaches the `/api/bridge/runs` proxy route), so every rule that depends on
 * what a request reaches keys on the route the router matched, never on the raw URL.
 */
export function isAppRoute(request: FastifyRequest): boolean {
  return request.method === 'GET' && request.routeOptions.url === APP_ROUTE;
}

/**
 * The navigation exemption covers the app's pages by their plain spelling only: routed to the app,
 * with no percent-encoding, no empty or dot segment and nothing under /api/. The app never links to
 * another spelling, and none of them can then reach the proxy whatever the router makes of it.
 */
function isPlainAppPage(request: FastifyRequest): boolean {
  if (!isAppRoute(request)) return false;
  const path = request.url.split('?')[0] ?? '';
  if (path.includes('%') || path.startsWith('/api/')) return false;
  return !path
    .slice(1)
    .split('/')
    .some((segment, i, all) => (segment === '' && i < all.length - 1) || segment === '.' || segment === '..');
}

/**
 * Browser defence, before any handler runs (after routing: the checks need the matched route):
 * - Host must name this loopback server, or a DNS-rebinding page could read the proxy as "same origin".
 * - A present Origin must be exactly this server: other ports on localhost are same-site, not same-origin,
 *   and any local web page could otherwise read runs through the token the proxy injects.
 * - Sec-Fetch-Site must be same-origin (or none: typed URL) for the API; a cross-site page may navigate
 *   to the app but never fetch, embed or script it.
 */
export function checkBrowserRequest(request: FastifyRequest, hosts: ReadonlySet<string>): UiError | null {
  const host = (request.headers.host ?? '').toLowerCase();
  if (!hosts.has(host))
    return new UiError('host_not_allowed', 'The Host header does not name this UI server');
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== `http://${host}`) {
    return new UiError('origin_not_allowed', 'Cross-origin requests are refused');
  }
  const site = request.headers['sec-fetch-site'];
  if (site === undefined || site === 'same-origin' || site === 'none') return null;
  const navigation = request.headers['sec-fetch-mode'] === 'navigate' && isPlainAppPage(request);
  return navigation ? null : new UiError('origin_not_allowed', 'Cross-site requests are refused');
}

export function sendUiError(reply: FastifyReply, err: UiError): FastifyReply {
  if (err.code === 'method_not_allowed') reply.header('allow', 'GET');
  return reply.code(err.status).type('application/json; charset=utf-8').send(err.body());
}
