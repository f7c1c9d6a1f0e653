import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { getGlobalDispatcher } from 'undici';
import { buildUiServer, type UiServerOptions } from '../../src/ui/server.js';

export const ACCESS_TOKEN = 'ui-test-access-token-0123456789abcdef-XYZ';

/**
 * The headers docs/ui.md puts on every UI answer, written out here rather than imported from
 * src/ui/guard.ts, so a change to the server's copy fails the tests that compare against it.
 */
export const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
} as const;

export interface RunningUi {
  app: FastifyInstance;
  origin: string;
  host: string;
  get(path: string, headers?: Record<string, string>): Promise<UiResponse>;
  send(method: string, path: string, headers?: Record<string, string>, body?: string): Promise<UiResponse>;
}

export interface UiResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json(): Record<string, unknown>;
}

/** Starts the real UI server on 127.0.0.1:0 in front of `bridgeUrl`; close it with `app.close()`. */
export async function startUi(
  bridgeUrl: URL,
  overrides: Partial<UiServerOptions> = {},
  beforeListen: (app: FastifyInstance) => void = () => {},
): Promise<RunningUi> {
  const app = await buildUiServer({
    host: '127.0.0.1',
    bridgeUrl,
    accessToken: ACCESS_TOKEN,
    timeoutMs: 10_000,
    webRoot: '/nonexistent-web-root',
    ...overrides,
  });
  beforeListen(app);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  const host = `127.0.0.1:${port}`;
  const origin = `http://${host}`;
  const send = async (method: string, path: string, headers: Record<string, string> = {}, body?: string) => {
    // `path` goes on the wire as written: a URL object would resolve dot segments before sending.
    const res = await getGlobalDispatcher().request({
      origin,
      path,
      method: method as 'GET',
      headers,
      ...(body === undefined ? {} : { body }),
    });
    const text = await res.body.text();
    return { status: res.statusCode, headers: res.headers, text, json: () => JSON.parse(text) };
  };
  return { app, origin, host, send, get: (path, headers) => send('GET', path, headers) };
}
