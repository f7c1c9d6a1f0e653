import { connect } from 'node:net';
import { unbracketed } from '../contract/loopback.js';

/**
 * The hook's bridge client: one HTTP/1.1 request per connection over `node:net`, with one deadline.
 * Not `node:http`: a hook is a fresh process on every tool call, and loading `node:http` and
 * running its request path for the first time costs a hook about 3.5 ms of its 20 above a bare
 * Node start (docs/performance.md, Hook). It talks only to the bridge's origin (bridgeUrl admits
 * an http:// loopback origin and nothing else) and reads a status line, headers, and a body of
 * `content-length` bytes, chunked, or up to the connection's close. Anything else is no answer.
 *
 * An answer is what the bridge said; status 0 is no answer (refused, reset, or past the deadline),
 * which the caller treats as "bridge down": telemetry goes to the outbox, a Red Zone decision blocks.
 */
export interface BridgeAnswer {
  status: number;
  body: Record<string, unknown>;
}

export interface BridgeClient {
  url: URL;
  token: string;
}

type Answer = BridgeAnswer | { status: 0; why: string };

/** Answers larger than this are cut off and treated as no answer (a run view is under 1 MiB). */
const ANSWER_MAX_BYTES = 2 * 1024 * 1024;
/** The bridge's status line and headers are a few hundred bytes. */
const HEAD_MAX_BYTES = 16 * 1024;
/** What a header value can carry, as `node:http` allows it: tab, printable ASCII and Latin-1, no line break. */
const HEADER_SAFE = /^[\t\x20-\x7e\x80-\xff]*$/;
/** A header field's name (RFC 9110 5.1): a token, nothing around it. */
const FIELD_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Why a token is not sent: a line break, or a character beyond Latin-1. */
export const TOKEN_UNSENDABLE = 'the access token holds a character an HTTP header cannot carry';

export function callBridge(
  client: BridgeClient,
  method: 'GET' | 'POST',
  path: string,
  body: unknown,
  deadlineMs: number,
): Promise<Answer> {
  if (!HEADER_SAFE.test(client.token)) return Promise.resolve({ status: 0, why: TOKEN_UNSENDABLE });
  const target = new URL(path, client.url);
  const payload = body === undefined ? null : Buffer.from(JSON.stringify(body));
  const head = [
    `${method} ${target.pathname}${target.search} HTTP/1.1`,
    `host: ${target.host}`,
    // No token (doctor's reachability check) sends none: the bridge answers with its public health.
    ...(client.token === '' ? [] : [`x-harness-bridge-token: ${client.token}`]),
    // The bridge closes after answering; the request side is never half-closed, which a Node
    // server would take as the request being abandoned.
    'connection: close',
    ...(payload === null ? [] : ['content-type: application/json', `content-length: ${payload.length}`]),
  ];
  const request = Buffer.from(`${head.join('\r\n')}\r\n\r\n`, 'latin1');
  return new Promise((resolve) => {
    const socket = connect({ host: unbracketed(target.hostname), port: Number(target.port || 80) });
    const reader = new AnswerReader();
    let settled = false;
    const done = (answer: Answer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => done({ status: 0, why: `no answer within ${deadlineMs} ms` }), deadlineMs);
    socket.on('data', (chunk: Buffer) => {
      const answer = reader.push(chunk);
      if (answer !== null) done(answer);
    });
    socket.on('end', () => done(reader.end()));
    socket.on('error', (err: NodeJS.ErrnoException) =>
      done({ status: 0, why: err.code === 'ECONNREFUSED' ? 'nothing listens there' : err.message }),
    );
    socket.write(payload === null ? request : Buffer.concat([request, payload]));
  });
}

/**
 * Reads one HTTP/1.x answer as it arrives: `push` returns it once whole (a body of
 * `content-length` bytes, or chunked up to its last chunk), `end` when the connection closed (a
 * body with neither ends there). Each byte is copied a bounded number of times, however the
 * answer is split into reads.
 */
export class AnswerReader {
  private chunks: Buffer[] = [];
  private size = 0;
  private status = 0;
  private bodyAt = -1;
  private length: number | null = null;
  private dechunker: Dechunker | null = null;

  push(chunk: Buffer): Answer | null {
    // A chunked body's bytes are the dechunker's to keep; the rest are joined when whole.
    if (this.dechunker === null) this.chunks.push(chunk);
    this.size += chunk.length;
    if (this.bodyAt < 0) {
      const all = this.joined();
      const headEnd = all.indexOf('\r\n\r\n');
      if (headEnd < 0 || headEnd > HEAD_MAX_BYTES)
        return this.size > HEAD_MAX_BYTES ? { status: 0, why: 'the answer was too large' } : null;
      const problem = this.readHead(all.subarray(0, headEnd).toString('latin1'));
      if (problem !== null) return { status: 0, why: problem };
      this.bodyAt = headEnd + 4;
      chunk = all.subarray(this.bodyAt);
    }
    if (this.size - this.bodyAt > ANSWER_MAX_BYTES) return { status: 0, why: 'the answer was too large' };
    if (this.dechunker !== null) {
      const body = this.dechunker.push(chunk);
      if (body === 'bad') return { status: 0, why: 'the answer has a malformed chunk' };
      return body === null ? null : this.answer(body);
    }
    if (this.length !== null && this.size - this.bodyAt >= this.length)
      return this.answer(this.joined().subarray(this.bodyAt, this.bodyAt + this.length));
    return null;
  }

  end(): Answer {
    if (this.bodyAt >= 0 && this.length === null && this.dechunker === null)
      return this.answer(this.joined().subarray(this.bodyAt));
    return { status: 0, why: 'the bridge closed the connection before its answer was whole' };
  }

  private joined(): Buffer {
    if (this.chunks.length > 1) this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0] ?? Buffer.alloc(0);
  }

  /** The status and how the body ends; a problem when the head is not an answer this client reads. */
  private readHead(text: string): string | null {
    const [statusLine = '', ...fields] = text.split('\r\n');
    const status = /^HTTP\/1\.[01] ([2-5]\d\d)(?: |$)/.exec(statusLine);
    if (status === null) return 'the answer is not an HTTP/1.1 answer';
    this.status = Number(status[1]);
    for (const field of fields) {
      const colon = field.indexOf(':');
      const name = field.slice(0, Math.max(colon, 0));
      if (!FIELD_NAME.test(name)) return 'the answer has a malformed header line';
      const value = field.slice(colon + 1).trim();
      switch (name.toLowerCase()) {
        case 'transfer-encoding':
          if (value.toLowerCase() !== 'chunked' || this.dechunker !== null)
            return `the answer has a transfer encoding this client does not read (${value})`;
          this.dechunker = new Dechunker();
          break;
        case 'content-length':
          if (!/^\d{1,8}$/.test(value) || (this.length !== null && this.length !== Number(value)))
            return 'the answer has an unreadable content-length';
          this.length = Number(value);
          break;
      }
    }
    // Both at once is how one answer is made to read as two (RFC 9112 6.3): not from the bridge.
    if (this.dechunker !== null && this.length !== null)
      return 'the answer has both a length and a transfer encoding';
    if (this.length !== null && this.length > ANSWER_MAX_BYTES) return 'the answer was too large';
    return null;
  }

  private answer(text: Buffer): BridgeAnswer {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text.toString('utf8'));
    } catch {
      parsed = null;
    }
    const ok = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed);
    return { status: this.status, body: ok ? (parsed as Record<string, unknown>) : {} };
  }
}

/** A chunk-size line longer than this is not one (hex digits and a short extension). */
const CHUNK_LINE_MAX_BYTES = 1024;

/**
 * A chunked body (RFC 9112 7.1) decoded as its bytes arrive: `push` gives null until the last
 * chunk has arrived, then the body; `bad` when it is not chunked data. Chunk extensions are
 * skipped and trailer fields not read. Bytes wait unparsed only until there are enough of them for
 * the next size line or the next whole chunk, so no byte is copied more than twice.
 */
class Dechunker {
  private readonly parts: Buffer[] = [];
  private waiting: Buffer[] = [];
  private waitingBytes = 0;
  /** Bytes needed before parsing can go on. */
  private need = 1;

  push(data: Buffer): Buffer | null | 'bad' {
    this.waiting.push(data);
    this.waitingBytes += data.length;
    if (this.waitingBytes < this.need) return null;
    let rest = this.waiting.length === 1 ? this.waiting[0]! : Buffer.concat(this.waiting);
    for (;;) {
      const lineEnd = rest.indexOf('\r\n');
      if (lineEnd < 0) {
        if (rest.length > CHUNK_LINE_MAX_BYTES) return 'bad';
        return this.wait(rest, rest.length + 1);
      }
      const size = rest.subarray(0, lineEnd).toString('latin1').split(';')[0]!.trim();
      if (!/^[0-9a-fA-F]{1,7}$/.test(size)) return 'bad';
      const n = Number.parseInt(size, 16);
      if (n === 0) return Buffer.concat(this.parts);
      const chunkEnd = lineEnd + 2 + n;
      if (rest.length < chunkEnd + 2) return this.wait(rest, chunkEnd + 2);
      if (rest[chunkEnd] !== 0x0d || rest[chunkEnd + 1] !== 0x0a) return 'bad';
      this.parts.push(rest.subarray(lineEnd + 2, chunkEnd));
      rest = rest.subarray(chunkEnd + 2);
    }
  }

  private wait(rest: Buffer, need: number): null {
    this.waiting = [rest];
    this.waitingBytes = rest.length;
    this.need = need;
    return null;
  }
}

/** A bridge answer's error as one line: `code: message`. */
export function answerLine(a: Answer): string {
  if (a.status === 0) return (a as { why: string }).why;
  const b = (a as BridgeAnswer).body;
  return `${String(b['error'] ?? a.status)}: ${String(b['message'] ?? '')}`;
}
