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
  // Our own timer, held until the answer is read, and our own reader of the body (`bodyText`).
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  try {
    return await answer(url, init, controller.signal, timeoutMs);
  } finally {
    clearTimeout(timer);
  }
}

async function answer(
  url: URL,
  init: { method?: string; body?: unknown; headers?: Record<string, string> },
  signal: AbortSignal,
  timeoutMs: number,
): Promise<BridgeResponse> {
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
    text = await bodyText(res, signal);
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
 * The answer's body as text, each read raced against `signal`: once it aborts, the body is
 * cancelled (which closes the connection) and the read rejects, whether or not fetch itself has
 * errored the stream. A body that stalled after the headers was once left pending in a full suite
 * run until undici's own 300 s body timeout, though the fetch's signal had aborted.
 */
export async function bodyText(res: Response, signal: AbortSignal): Promise<string> {
  if (res.body === null) return '';
  const reader = res.body.getReader();
  const aborted = new Promise<never>((_, reject) => {
    const fail = () => reject(signal.reason);
    if (signal.aborted) fail();
    else signal.addEventListener('abort', fail, { once: true });
  });
  aborted.catch(() => {});
  const chunks: Uint8Array[] = [];
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), aborted]);
      if (done) break;
      chunks.push(value);
    }
  } catch (err) {
    await reader.cancel().catch(() => {});
    throw err;
  }
  return Buffer.concat(chunks).toString('utf8');
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
