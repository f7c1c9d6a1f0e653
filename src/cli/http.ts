import { BridgeError } from '../contract/errors.js';
import { BridgeTimeout } from '../sources/client.js';
import { bridgeUrl, clientTimeoutMs } from './env.js';
import { terminalText } from './terminal.js';

export interface BridgeResponse {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}

export { BridgeTimeout };

/**
 * One request to the bridge; a network failure is reported as such, never as a bridge answer.
 * Bounded by HARNESS_CLIENT_TIMEOUT_MS from the request to the last byte of the answer, so a bridge
 * that accepts the connection and never answers (stopped with SIGSTOP, wedged) cannot hang the
 * command: past it, BridgeTimeout.
 */
export async function bridgeRequest(
  path: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {},
  env: NodeJS.ProcessEnv = process.env,
): Promise<BridgeResponse> {
  const url = new URL(path, bridgeUrl(env));
  // A caller's own shorter bound (a source polling the bridge) takes precedence.
  const timeoutMs = Math.min(init.timeoutMs ?? Number.POSITIVE_INFINITY, clientTimeoutMs(env));
  const signal = AbortSignal.timeout(timeoutMs);
  const timedOut = () =>
    new BridgeTimeout(
      `the bridge at ${url.origin} gave no answer within ${timeoutMs / 1000} s (HARNESS_CLIENT_TIMEOUT_MS)`,
    );
  const headers: Record<string, string> = { ...init.headers };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  let text: string;
  try {
    res = await fetch(url, {
      method: init.method ?? 'GET',
      headers,
      redirect: 'error',
      signal,
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });
  } catch (err) {
    if (signal.aborted) throw timedOut();
    throw new Error(unreachable(url.origin, err as Error));
  }
  try {
    text = await res.text();
  } catch (err) {
    if (signal.aborted) throw timedOut();
    throw err;
  }
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = { ok: false, error: 'invalid_response', message: text.slice(0, 200) };
  }
  return { status: res.status, body, headers: res.headers };
}

/**
 * Why fetch failed, in one line. Nothing listening (ECONNREFUSED, also the code of the
 * AggregateError a name with several addresses fails with) is mostly a bridge not started yet or
 * started elsewhere, so the line says how to start it or point the client at it.
 */
function unreachable(origin: string, err: Error): string {
  const cause = err.cause;
  const code = cause instanceof Error ? (cause as NodeJS.ErrnoException).code : undefined;
  const why = cause instanceof Error ? cause.message || code || cause.name : String(cause ?? err.message);
  const hint =
    code === 'ECONNREFUSED'
      ? '; is the bridge running (`npm start` or `harness bridge`)? If it listens elsewhere, set HARNESS_BRIDGE_URL'
      : '';
  return `cannot reach the bridge at ${origin}: ${why}${hint}`;
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
