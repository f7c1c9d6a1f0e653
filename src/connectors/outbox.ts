// `promises as fsp`, read at each call: the hook bundle then loads `node:fs/promises` only when an
// outbox is touched.
import { constants, promises as fsp, statSync } from 'node:fs';
import { join } from 'node:path';
import { type BridgeAnswer, type BridgeClient, callBridge } from './bridge-client.js';
import { runFileStem } from './names.js';

/**
 * Events a hook could not deliver wait here, one 0600 JSONL file per run under
 * `~/.harness/outbox/`, each line an event with the id it was given, and are delivered in order,
 * first, by the next hook call of that run or by `harness outbox flush`. Redelivery is safe: the
 * bridge answers a repeated id with identical content as a duplicate and stores nothing.
 *
 * Every read-modify-write of a run's file happens under its lock file. A holder never goes more
 * than FLUSH_STEP_MS without refreshing the lock, so a lock untouched for LOCK_STALE_MS is one whose
 * holder died; a waiter breaks it. Waiters wait at most LOCK_WAIT_MS: a hook never hangs its agent.
 */
export const OUTBOX_MAX_BYTES = 8 * 1024 * 1024;
const FLUSH_STEP_MS = 5000;
const LOCK_STALE_MS = 10_000;
const LOCK_WAIT_MS = 12_000;

export type Event = Record<string, unknown> & { id: string };

export class OutboxFullError extends Error {
  override readonly name = 'OutboxFullError';
}

export function outboxDir(home: string): string {
  return join(home, '.harness', 'outbox');
}

/** Whether a name in the outbox directory is a run's file (outboxFile). */
export const isOutboxFileName = (name: string): boolean =>
  /^run-[a-z0-9][a-z0-9._-]{0,127}(\+[0-9a-f]+)?\.jsonl$/.test(name);

/** The run's file, named by its ID (see runFileStem). */
export function outboxFile(home: string, runId: string): string {
  return join(outboxDir(home), `run-${runFileStem(runId)}.jsonl`);
}

/** What delivering one event came to: stored (or a duplicate), refused for good, or not yet. */
export type Delivery =
  | { kind: 'stored'; answer: BridgeAnswer }
  | { kind: 'refused'; answer: BridgeAnswer }
  | { kind: 'later'; why: string };

export async function deliver(
  client: BridgeClient,
  runId: string,
  event: Event,
  deadlineMs: number,
): Promise<Delivery> {
  const a = await callBridge(client, 'POST', `/runs/${encodeURIComponent(runId)}/events`, event, deadlineMs);
  if (a.status === 0) return { kind: 'later', why: (a as { why: string }).why };
  const answer = a as BridgeAnswer;
  if (answer.status >= 200 && answer.status < 300) return { kind: 'stored', answer };
  // The bridge is busy, broken, or does not take this token now (rotated on restart): try again.
  if (answer.status >= 500 || answer.status === 401)
    return { kind: 'later', why: `${answer.status} ${String(answer.body['error'] ?? '')}` };
  return { kind: 'refused', answer };
}

interface Line {
  runId: string;
  event: Event;
}

async function withLock<T>(file: string, fn: (touch: () => Promise<void>) => Promise<T>): Promise<T> {
  const lock = `${file}.lock`;
  const until = Date.now() + LOCK_WAIT_MS;
  await fsp.mkdir(join(file, '..'), { recursive: true, mode: 0o700 });
  for (;;) {
    try {
      const h = await fsp.open(lock, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o600);
      await h.writeFile(String(process.pid));
      await h.close();
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const held = await fsp.stat(lock).catch(() => null);
      if (held !== null && Date.now() - held.mtimeMs > LOCK_STALE_MS) await fsp.unlink(lock).catch(() => {});
      else if (Date.now() > until) throw new Error(`the outbox ${file} stayed locked for ${LOCK_WAIT_MS} ms`);
      else await new Promise((r) => setTimeout(r, 20));
    }
  }
  const touch = () => fsp.utimes(lock, new Date(), new Date()).catch(() => {});
  try {
    return await fn(touch);
  } finally {
    await fsp.unlink(lock).catch(() => {});
  }
}

async function readLines(file: string): Promise<{ lines: Line[]; bytes: number }> {
  const text = await fsp.readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return '';
    throw err;
  });
  const lines: Line[] = [];
  for (const l of text.split('\n')) {
    if (l === '') continue;
    // A line that does not parse was cut by a crash mid-append: it was never acknowledged to anyone.
    try {
      lines.push(JSON.parse(l) as Line);
    } catch {}
  }
  return { lines, bytes: Buffer.byteLength(text) };
}

async function writeLines(file: string, lines: Line[]): Promise<void> {
  if (lines.length === 0) {
    await fsp.unlink(file).catch(() => {});
    return;
  }
  const tmp = `${file}.${process.pid}.tmp`;
  await fsp.writeFile(tmp, lines.map((l) => `${JSON.stringify(l)}\n`).join(''), { mode: 0o600 });
  await fsp.rename(tmp, file);
}

const sizeOf = (file: string) =>
  fsp.stat(file).then(
    (s) => s.size,
    () => 0,
  );

async function append(file: string, line: Line, bytesNow: number): Promise<void> {
  const text = `${JSON.stringify(line)}\n`;
  if (bytesNow + Buffer.byteLength(text) > OUTBOX_MAX_BYTES)
    throw new OutboxFullError(
      `the outbox ${file} is full (${OUTBOX_MAX_BYTES} bytes): start the bridge, then run \`harness outbox flush\``,
    );
  await fsp.writeFile(file, text, { flag: 'a', mode: 0o600 });
}

export interface FlushResult {
  stored: number;
  refused: { event: Event; answer: BridgeAnswer }[];
  left: number;
  why?: string;
}

/** Delivers `lines` in order until one must wait; what is left stays, in order. Caller holds the lock. */
async function flushLines(
  client: BridgeClient,
  lines: Line[],
  budgetMs: number,
  touch: () => Promise<void>,
): Promise<FlushResult & { rest: Line[] }> {
  const until = Date.now() + budgetMs;
  const result: FlushResult & { rest: Line[] } = { stored: 0, refused: [], left: 0, rest: [] };
  let i = 0;
  for (; i < lines.length; i++) {
    const remaining = until - Date.now();
    if (remaining <= 0) {
      result.why = 'out of time';
      break;
    }
    const { runId, event } = lines[i]!;
    const d = await deliver(client, runId, event, Math.min(remaining, FLUSH_STEP_MS));
    await touch();
    if (d.kind === 'later') {
      result.why = d.why;
      break;
    }
    if (d.kind === 'stored') result.stored++;
    else result.refused.push({ event, answer: d.answer });
  }
  result.rest = lines.slice(i);
  result.left = result.rest.length;
  return result;
}

/** Delivers what waits in one outbox file, in order, for at most `budgetMs`. */
export async function flushFile(client: BridgeClient, file: string, budgetMs: number): Promise<FlushResult> {
  return withLock(file, async (touch) => {
    const { lines } = await readLines(file);
    const r = await flushLines(client, lines, budgetMs, touch);
    if (r.rest.length !== lines.length) await writeLines(file, r.rest);
    return {
      stored: r.stored,
      refused: r.refused,
      left: r.left,
      ...(r.why === undefined ? {} : { why: r.why }),
    };
  });
}

/** Queues one event without trying the bridge (no token to send it with yet). */
export async function enqueue(home: string, runId: string, event: Event): Promise<void> {
  const file = outboxFile(home, runId);
  await withLock(file, async () => append(file, { runId, event }, await sizeOf(file)));
}

export type SendResult =
  | { kind: 'stored'; answer: BridgeAnswer; flushed: FlushResult | null }
  | { kind: 'refused'; answer: BridgeAnswer; flushed: FlushResult | null }
  | { kind: 'queued'; why: string; flushed: FlushResult | null };

/**
 * Sends one event of `runId`, in order behind whatever waits in its outbox: the outbox is delivered
 * first; the event is posted only once it is empty, and queued when the bridge does not answer.
 * Throws OutboxFullError when it can be neither delivered nor queued.
 */
export async function send(
  client: BridgeClient,
  home: string,
  runId: string,
  event: Event,
  deadlineMs: number,
): Promise<SendResult> {
  const file = outboxFile(home, runId);
  // Synchronous, and `fsp` reached only past it: on the common path (nothing waits) a hook then
  // neither loads `node:fs/promises` nor waits on the thread pool (docs/performance.md, Hook).
  // A file that cannot be looked at (an unreadable or misplaced outbox directory) holds nothing
  // this call could deliver first: the event is posted, and queued only if that fails.
  let waiting = false;
  try {
    waiting = (statSync(file, { throwIfNoEntry: false })?.size ?? 0) > 0;
  } catch {}
  let flushed: FlushResult | null = null;
  if (waiting) {
    const queued = await withLock(file, async (touch) => {
      const { lines, bytes } = await readLines(file);
      const r = await flushLines(client, lines, deadlineMs, touch);
      flushed = { stored: r.stored, refused: r.refused, left: r.left };
      if (r.rest.length !== lines.length) await writeLines(file, r.rest);
      if (r.rest.length === 0) return null;
      // Still waiting: this event goes behind them, never ahead.
      await append(file, { runId, event }, r.rest.length === lines.length ? bytes : await sizeOf(file));
      return r.why ?? 'events wait before it';
    });
    if (queued !== null) return { kind: 'queued', why: queued, flushed };
  }
  const d = await deliver(client, runId, event, deadlineMs);
  if (d.kind !== 'later') return { ...d, flushed };
  await withLock(file, async () => append(file, { runId, event }, await sizeOf(file)));
  return { kind: 'queued', why: d.why, flushed };
}
