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

/**
 * Browser defence, before any routing work:
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
  const navigation = request.headers['sec-fetch-mode'] === 'navigate' && !request.url.startsWith('/api/');
  return navigation ? null : new UiError('origin_not_allowed', 'Cross-site requests are refused');
}

export function sendUiError(reply: FastifyReply, err: UiError): FastifyReply {
  if (err.code === 'method_not_allowed') reply.header('allow', 'GET');
  return reply.code(err.status).type('application/json; charset=utf-8').send(err.body());
}
