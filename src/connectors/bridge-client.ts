import { request } from 'node:http';

/**
 * The hook's bridge client: `node:http` and one deadline per request, nothing else to load. An
 * answer is what the bridge said; `null` is no answer (refused, reset, or past the deadline), which
 * the caller treats as "bridge down": telemetry goes to the outbox, a Red Zone decision blocks.
 */
export interface BridgeAnswer {
  status: number;
  body: Record<string, unknown>;
}

export interface BridgeClient {
  url: URL;
  token: string;
}

/** Answers larger than this are cut off and treated as no answer (a run view is under 1 MiB). */
const ANSWER_MAX_BYTES = 2 * 1024 * 1024;

export function callBridge(
  client: BridgeClient,
  method: 'GET' | 'POST',
  path: string,
  body: unknown,
  deadlineMs: number,
): Promise<BridgeAnswer | { status: 0; why: string }> {
  return new Promise((resolve) => {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const headers: Record<string, string> = { 'x-harness-bridge-token': client.token };
    if (payload !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(payload.length);
    }
    let settled = false;
    const done = (answer: BridgeAnswer | { status: 0; why: string }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(answer);
    };
    const req = request(new URL(path, client.url), { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > ANSWER_MAX_BYTES) {
          req.destroy();
          done({ status: 0, why: 'the answer was too large' });
        } else chunks.push(c);
      });
      res.on('end', () => {
        let parsed: unknown;
        try {
          parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          parsed = null;
        }
        const ok = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed);
        done({ status: res.statusCode ?? 0, body: ok ? (parsed as Record<string, unknown>) : {} });
      });
      res.on('error', (err) => done({ status: 0, why: err.message }));
    });
    const timer = setTimeout(() => {
      req.destroy();
      done({ status: 0, why: `no answer within ${deadlineMs} ms` });
    }, deadlineMs);
    req.on('error', (err: NodeJS.ErrnoException) =>
      done({ status: 0, why: err.code === 'ECONNREFUSED' ? 'nothing listens there' : err.message }),
    );
    req.end(payload);
  });
}

/** A bridge answer's error as one line: `code: message`. */
export function answerLine(a: BridgeAnswer | { status: 0; why: string }): string {
  if (a.status === 0) return (a as { why: string }).why;
  const b = (a as BridgeAnswer).body;
  return `${String(b['error'] ?? a.status)}: ${String(b['message'] ?? '')}`;
}
