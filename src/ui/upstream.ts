import { type Dispatcher, request } from 'undici';
import { UiError } from './errors.js';

export interface UpstreamOptions {
  accessToken: string;
  timeoutMs: number;
  maxBytes: number;
  /** Aborts the upstream call when the browser goes away. */
  signal?: AbortSignal;
}

export interface UpstreamResponse {
  status: number;
  /** Only the headers the browser may see (CONTRACT section 8). */
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * Drops a body the proxy will not relay. Destroying an undici body that has not ended emits
 * 'error' (RequestAbortedError); whether undici listens by then depends on how far the response
 * got (a pipelined browser connection is enough), and an unheard 'error' ends the UI process.
 */
function discard(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => {});
  body.destroy();
}

/** Page headers carry plain decimals; anything else from upstream is dropped, never relayed. */
const PAGE_HEADER = /^x-harness-page-[a-z]{1,16}$/;
const DECIMAL = /^[0-9]{1,16}$/;
/**
 * The media type is exactly application/json, with or without parameters: a prefix match would
 * let application/json-seq, application/json-patch+json or a list such as
 * `application/json, text/html` through.
 */
const JSON_MEDIA_TYPE = /^application\/json[\t ]*(?:;|$)/i;

export function safeHeaders(upstream: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
  for (const [name, value] of Object.entries(upstream)) {
    if (typeof value !== 'string') continue;
    const lower = name.toLowerCase();
    if ((PAGE_HEADER.test(lower) || lower === 'x-harness-next-cursor') && DECIMAL.test(value))
      out[lower] = value;
  }
  return out;
}

/**
 * One GET to the bridge under a single deadline covering connect, headers and the whole body.
 * The request headers are built from scratch: nothing the browser sent (cookies, authorization,
 * a token it made up) can reach the bridge. Redirects are never followed, and the body is
 * counted as it streams so a hostile or broken upstream cannot make the proxy buffer without bound.
 */
export async function fetchUpstream(url: URL, options: UpstreamOptions): Promise<UpstreamResponse> {
  const deadline = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([deadline, options.signal]) : deadline;
  try {
    const res = await request(url, {
      method: 'GET',
      headers: { accept: 'application/json', 'x-harness-bridge-token': options.accessToken },
      signal,
    });
    if (res.statusCode >= 300 && res.statusCode < 400) {
      discard(res.body);
      throw new UiError(
        'bridge_redirect_rejected',
        'The bridge answered with a redirect; the proxy does not follow it',
      );
    }
    const type = res.headers['content-type'];
    if (typeof type !== 'string' || !JSON_MEDIA_TYPE.test(type) || res.headers['content-encoding']) {
      discard(res.body);
      throw new UiError('bridge_bad_response', 'The bridge answered with something other than plain JSON');
    }
    const declared = Number(res.headers['content-length'] ?? 0);
    if (declared > options.maxBytes) {
      discard(res.body);
      throw tooLarge(options.maxBytes);
    }
    const chunks: Buffer[] = [];
    let total = 0;
    for await (const chunk of res.body) {
      total += (chunk as Buffer).length;
      if (total > options.maxBytes) {
        discard(res.body);
        throw tooLarge(options.maxBytes);
      }
      chunks.push(chunk as Buffer);
    }
    return { status: res.statusCode, headers: safeHeaders(res.headers), body: Buffer.concat(chunks) };
  } catch (err) {
    if (err instanceof UiError) throw err;
    if (deadline.aborted) {
      throw new UiError('bridge_timeout', `The bridge did not answer within ${options.timeoutMs} ms`);
    }
    // The cause may carry addresses or library detail; the browser gets only the code.
    throw new UiError('bridge_unreachable', 'The bridge could not be reached');
  }
}

function tooLarge(maxBytes: number): UiError {
  return new UiError('bridge_response_too_large', `The bridge response exceeded ${maxBytes} bytes`);
}
