import { BridgeError } from '../contract/errors.js';
import { bridgeUrl } from './env.js';
import { terminalText } from './terminal.js';

export interface BridgeResponse {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}

/** One request to the bridge; a network failure is reported as such, never as a bridge answer. */
export async function bridgeRequest(
  path: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
  env: NodeJS.ProcessEnv = process.env,
): Promise<BridgeResponse> {
  const url = new URL(path, bridgeUrl(env));
  const headers: Record<string, string> = { ...init.headers };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(url, {
      method: init.method ?? 'GET',
      headers,
      redirect: 'error',
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });
  } catch (err) {
    throw new Error(
      `cannot reach the bridge at ${url.origin}: ${(err as Error).cause ?? (err as Error).message}`,
    );
  }
  const text = await res.text();
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = { ok: false, error: 'invalid_response', message: text.slice(0, 200) };
  }
  return { status: res.status, body, headers: res.headers };
}

/** Prints a failed answer as `code: message` plus one line per problem (stderr). */
export function describeFailure(r: BridgeResponse): string {
  const problems = Array.isArray(r.body['problems'])
    ? (r.body['problems'] as unknown[]).map((p) => `  - ${terminalText(String(p))}`)
    : [];
  const head = `${String(r.body['error'] ?? r.status)}: ${String(r.body['message'] ?? '')}`;
  return [terminalText(head), ...problems].join('\n');
}

export { BridgeError };
