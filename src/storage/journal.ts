import { fdatasync, write } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import type { ArtifactClaim, CompletionSeal, JournalEntry, StoredEvent } from '../contract/index.js';
import { JOURNAL_RECORD_MAX_BYTES } from '../contract/index.js';
import { canonicalJson } from './canonical.js';
import { GENESIS, mac, macEqual, macText } from './mac.js';

/**
 * `events.jsonl`: one JSON record per line, each MAC'd over (runId, seq, prev MAC, event, claim),
 * so a record cannot be edited, reordered, dropped from the middle or moved to another run.
 */
interface JournalRecord {
  seq: number;
  prev: string;
  event: StoredEvent;
  claim: ArtifactClaim | null;
  seal?: CompletionSeal | null;
  mac: string;
}

export class JournalAuthError extends Error {
  override readonly name = 'JournalAuthError';
}

export function recordMac(key: Buffer, runId: string, r: Omit<JournalRecord, 'mac'>): string {
  const body = { runId, seq: r.seq, prev: r.prev, event: r.event, claim: r.claim };
  // The seal is MAC'd only where present, so ordinary records keep their shape.
  return mac(key, 'harness.journal.v1', r.seal ? { ...body, seal: r.seal } : body);
}

const canonical = (value: unknown): string => {
  const text = canonicalJson(value);
  if (text === undefined) throw new Error('value has no canonical JSON form');
  return text;
};

/**
 * Seals a new record: its MAC (exactly `recordMac`) and its journal line. Each part is made
 * canonical once and the two texts are assembled around it, instead of canonicalizing the whole
 * record for the MAC and serializing it again for the line. The MAC input lists the members in
 * RFC 8785 order (claim, event, prev, runId, seal, seq); run IDs, MACs and sequence numbers never
 * need escaping, so JSON.stringify writes them canonically. The line is parsed, never compared,
 * when it is verified, so its member order is free.
 */
export function sealRecord(
  key: Buffer,
  runId: string,
  seq: number,
  prev: string,
  event: StoredEvent,
  claim: ArtifactClaim | null,
  seal: CompletionSeal | null,
): { mac: string; line: string } {
  const e = canonical(event);
  const c = canonical(claim);
  const s = seal ? canonical(seal) : null;
  const p = JSON.stringify(prev);
  const sealPart = s === null ? '' : `,"seal":${s}`;
  const signed = `{"claim":${c},"event":${e},"prev":${p},"runId":${JSON.stringify(runId)}${sealPart},"seq":${seq}}`;
  const recordMacHex = macText(key, 'harness.journal.v1', signed);
  return {
    mac: recordMacHex,
    line: `{"seq":${seq},"prev":${p},"event":${e},"claim":${c}${sealPart},"mac":"${recordMacHex}"}\n`,
  };
}

/** The `prev` a page's first record claims (its MAC still has to verify); unparseable is tampering. */
function claimedPrevOf(line: string, seq: number): string {
  try {
    return (JSON.parse(line) as { prev?: unknown }).prev as string;
  } catch {
    throw new JournalAuthError(`journal record ${seq} is not JSON`);
  }
}

/** Parses and authenticates one line; `expectedPrev` chains it to the record before. */
export function verifyLine(
  key: Buffer,
  runId: string,
  line: string,
  seq: number,
  expectedPrev: string,
): JournalRecord {
  let r: JournalRecord;
  try {
    r = JSON.parse(line) as JournalRecord;
  } catch {
    throw new JournalAuthError(`journal record ${seq} is not JSON`);
  }
  if (typeof r !== 'object' || r === null || r.seq !== seq || typeof r.mac !== 'string') {
    throw new JournalAuthError(`journal record ${seq} is malformed or out of order`);
  }
  if (r.prev !== expectedPrev || !macEqual(r.mac, recordMac(key, runId, r))) {
    throw new JournalAuthError(`journal record ${seq} fails authentication`);
  }
  return r;
}

export interface ScanResult {
  entries: JournalEntry[];
  offsets: number[];
  macs: string[];
  size: number;
  truncatedBytes: number;
}

/**
 * Reads and authenticates the whole journal. An incomplete last line (no newline: a write torn
 * by a crash, never acknowledged because its fdatasync had not returned) is cut off; any complete
 * line that fails authentication is an error, never skipped. `readOnly` (offline verification)
 * opens the file for reading only and reports a torn tail in `truncatedBytes` without cutting it.
 */
export async function scanJournal(
  key: Buffer,
  runId: string,
  path: string,
  opts: { readOnly?: boolean } = {},
): Promise<ScanResult> {
  const handle = await open(path, opts.readOnly ? 'r' : 'r+');
  try {
    const buf = await handle.readFile();
    const end = buf.lastIndexOf(0x0a) + 1;
    const entries: JournalEntry[] = [];
    const offsets: number[] = [];
    const macs: string[] = [];
    let prev = GENESIS;
    let offset = 0;
    while (offset < end) {
      const nl = buf.indexOf(0x0a, offset);
      const seq = entries.length;
      const r = verifyLine(key, runId, buf.toString('utf8', offset, nl), seq, prev);
      entries.push({ seq, event: r.event, claim: r.claim, seal: r.seal ?? null });
      offsets.push(offset);
      macs.push(r.mac);
      prev = r.mac;
      offset = nl + 1;
    }
    if (end < buf.length && !opts.readOnly) {
      await handle.truncate(end);
      await handle.datasync();
    }
    return { entries, offsets, macs, size: end, truncatedBytes: buf.length - end };
  } finally {
    await handle.close();
  }
}

/** Writes all of `data` at the end of the file, retrying after a short write. */
function writeAll(fd: number, data: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const step = (offset: number) =>
      write(fd, data, offset, data.length - offset, null, (err, n) => {
        if (err) reject(err);
        else if (n === 0) reject(new Error('journal write made no progress'));
        else if (offset + n < data.length) step(offset + n);
        else resolve();
      });
    step(0);
  });
}

function datasync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fdatasync(fd, (err) => (err ? reject(err) : resolve())));
}

interface Pending {
  bytes: Buffer;
  resolve: () => void;
  reject: (err: Error) => void;
}

/**
 * The append side of an open journal. `append` is synchronous up to the queue (so the caller's
 * state stays in step with record order); durability is a promise. While one write+fdatasync is
 * in flight, every record queued meanwhile is written and synced together (group commit). A flush
 * from idle first lets the current turn of the event loop finish, so events of one run parsed in
 * the same turn share the write and the sync. The raw descriptor and callback API keep the
 * per-batch cost to one write and one fdatasync on the thread pool.
 */
export class JournalWriter {
  private readonly queue: Pending[] = [];
  private flushing = false;
  private failure: Error | null = null;
  private idleWaiters: (() => void)[] = [];

  private constructor(
    private readonly handle: FileHandle,
    private readonly key: Buffer,
    private readonly runId: string,
    public readonly offsets: number[],
    private head: string,
    private size: number,
  ) {}

  static async open(key: Buffer, runId: string, path: string, scan: ScanResult): Promise<JournalWriter> {
    const handle = await open(path, 'a+');
    return new JournalWriter(handle, key, runId, scan.offsets, scan.macs.at(-1) ?? GENESIS, scan.size);
  }

  get count(): number {
    return this.offsets.length;
  }

  get headMac(): string {
    return this.head;
  }

  get broken(): Error | null {
    return this.failure;
  }

  /** Seals the next record and queues it; resolves once it is on disk. */
  append(
    event: StoredEvent,
    claim: ArtifactClaim | null,
    seal: CompletionSeal | null = null,
  ): { entry: JournalEntry; durable: Promise<void> } {
    if (this.failure) throw this.failure;
    const seq = this.offsets.length;
    const sealed = sealRecord(this.key, this.runId, seq, this.head, event, claim, seal);
    const recordMacHex = sealed.mac;
    const bytes = Buffer.from(sealed.line);
    if (bytes.length > JOURNAL_RECORD_MAX_BYTES) throw new RangeError('journal record exceeds its ceiling');
    this.offsets.push(this.size);
    this.size += bytes.length;
    this.head = recordMacHex;
    const durable = new Promise<void>((resolve, reject) => this.queue.push({ bytes, resolve, reject }));
    if (!this.flushing) void this.flush();
    return { entry: { seq, event, claim, seal }, durable };
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.queue.length);
      try {
        const data = batch.length === 1 ? batch[0]!.bytes : Buffer.concat(batch.map((p) => p.bytes));
        await writeAll(this.handle.fd, data);
        await datasync(this.handle.fd);
        for (const p of batch) p.resolve();
      } catch (err) {
        // The in-memory head no longer matches the disk: fail everything and let the store
        // reopen the run from disk (which truncates any torn tail).
        this.failure = err instanceof Error ? err : new Error(String(err));
        for (const p of [...batch, ...this.queue.splice(0)]) p.reject(this.failure);
      }
    }
    this.flushing = false;
    for (const w of this.idleWaiters.splice(0)) w();
  }

  /** Resolves when every queued record is durable (reads wait on this). */
  idle(): Promise<void> {
    if (!this.flushing && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Reads and re-authenticates records [from, to) for an event page: each record's MAC binds its
   * run and position, and consecutive records must chain, so disk edits since open are caught.
   */
  async read(from: number, to: number): Promise<JournalEntry[]> {
    await this.idle();
    if (this.failure) throw this.failure;
    const entries: JournalEntry[] = [];
    if (from >= to) return entries;
    const start = this.offsets[from] ?? this.size;
    const buf = Buffer.alloc((this.offsets[to] ?? this.size) - start);
    await this.handle.read(buf, 0, buf.length, start);
    let prev: string | null = null;
    for (let seq = from; seq < to; seq++) {
      const a = (this.offsets[seq] ?? this.size) - start;
      const b = (this.offsets[seq + 1] ?? this.size) - start;
      const line = buf.toString('utf8', a, b - 1);
      const claimedPrev: string = prev ?? claimedPrevOf(line, seq);
      const r = verifyLine(this.key, this.runId, line, seq, claimedPrev);
      prev = r.mac;
      entries.push({ seq, event: r.event, claim: r.claim, seal: r.seal ?? null });
    }
    return entries;
  }

  async close(): Promise<void> {
    await this.idle();
    await this.handle.close();
  }
}
