import type { FileHandle } from 'node:fs/promises';
import type { ArtifactClaim, CompletionSeal, JournalEntry, StoredEvent } from '../contract/index.js';
import {
  JOURNAL_MAX_BYTES,
  JOURNAL_RECORD_MAX_BYTES,
  JOURNAL_WRITE_BEHIND_BYTES,
} from '../contract/index.js';
import type { CommitLog, LoggedJournal } from './commit-log.js';
import { datasync, writeAllSync } from './fd-io.js';
import {
  claimedPrevOf,
  EventTooLargeError,
  eventBytesOverLimit,
  firstPrev,
  JournalAuthError,
  type JournalRecord,
  sealRecord,
  verifyLine,
} from './journal-record.js';
import { openNoFollow, READ, READ_APPEND, READ_WRITE } from './no-follow.js';

/**
 * `events.jsonl` as a file: the chunked scan that authenticates a whole journal on open, and the
 * writer that appends sealed records (src/storage/journal-record.ts has the record format).
 */

/** A record appended: its entry, a promise settled once it is durable, the event's canonical JSON. */
export interface Appended {
  entry: JournalEntry;
  durable: Promise<void>;
  eventJson: string;
}

export interface ScanResult {
  /** Records authenticated. */
  count: number;
  offsets: number[];
  macs: string[];
  size: number;
  truncatedBytes: number;
}

export interface ScanOptions {
  /** Offline verification: open for reading only, report a torn tail without cutting it. */
  readOnly?: boolean;
  /** Called with each authenticated entry in journal order; the scan itself keeps none. */
  onEntry?: (entry: JournalEntry) => void;
  /** Bytes read at a time (tests make it small to put records across reads). */
  chunkBytes?: number;
  /**
   * The MAC of the run's config (`configMac`): record 0 must chain from it, so the journal is
   * bound to the config it was started under. Without it (commit-log replay, which has no config
   * at hand) record 0 is authenticated by its MAC alone; opening the run checks the binding.
   */
  genesis?: string;
  /**
   * Stops at the first complete line that fails authentication instead of throwing: `count`,
   * `macs` and `size` then cover the authentic records before it, and nothing is cut (with
   * `readOnly`: the prefix a damaged tail is rewritten after, commit-log-replay.ts).
   */
  untilDamage?: boolean;
}

const NEWLINE = Buffer.from('\n');

/** Reads of this size keep a scan's memory bounded whatever the journal's size. */
export const SCAN_CHUNK_BYTES = 1024 * 1024;

/**
 * Reads and authenticates the whole journal, a chunk at a time: memory stays bounded by one chunk
 * plus one record (the bridge never writes a line longer than JOURNAL_RECORD_MAX_BYTES), however
 * large the file, and entries go to `onEntry` instead of being collected. An incomplete last line
 * (no newline: a write torn by a crash, never acknowledged because its fdatasync had not
 * returned) is cut off, unless it ends as a record does and authenticates as the next one: that
 * record lacks only its newline, which is written back. Any complete line that fails
 * authentication, or is longer than any record the bridge writes, is an error, never skipped. `readOnly` (offline verification) opens the file
 * for reading only and reports a torn tail in `truncatedBytes` without cutting it.
 */
export async function scanJournal(
  key: Buffer,
  runId: string,
  path: string,
  opts: ScanOptions = {},
): Promise<ScanResult> {
  const chunk = Math.max(1, opts.chunkBytes ?? SCAN_CHUNK_BYTES);
  const onEntry = opts.onEntry;
  const handle = await openNoFollow(path, opts.readOnly ? READ : READ_WRITE);
  try {
    // Holds the unfinished line carried over (under one record) and the next chunk after it.
    const buf = Buffer.allocUnsafe(JOURNAL_RECORD_MAX_BYTES + chunk);
    const offsets: number[] = [];
    const macs: string[] = [];
    let prev = ''; // record 0's is chosen by firstPrev
    let base = 0; // file offset of buf[0]
    let len = 0; // bytes of buf in use
    let lineStart = 0; // file offset of the line not yet ended
    let overlong = false; // inside a line already longer than any record
    /** Authenticates `line` as the next record (chained to the last); throws if it is not. */
    const verifyNext = (line: string): JournalRecord => {
      const seq = offsets.length;
      return verifyLine(key, runId, line, seq, seq === 0 ? firstPrev(line, opts.genesis) : prev);
    };
    /** Takes an authenticated record starting at file offset `at`. */
    const take = (r: JournalRecord, at: number): void => {
      onEntry?.({ seq: offsets.length, event: r.event, claim: r.claim, seal: r.seal ?? null });
      offsets.push(at);
      macs.push(r.mac);
      prev = r.mac;
    };
    for (;;) {
      const { bytesRead } = await handle.read(buf, len, chunk, base + len);
      if (bytesRead === 0) break;
      len += bytesRead;
      const view = buf.subarray(0, len);
      let at = 0;
      let nl = view.indexOf(0x0a, at);
      if (overlong && nl >= 0) {
        if (opts.untilDamage) return authenticPrefix(offsets, macs, lineStart);
        throw new JournalAuthError(`journal record ${offsets.length} exceeds its ceiling`);
      }
      while (nl >= 0) {
        let r: JournalRecord;
        try {
          r = verifyNext(view.toString('utf8', at, nl));
        } catch (err) {
          if (!opts.untilDamage || !(err instanceof JournalAuthError)) throw err;
          return authenticPrefix(offsets, macs, base + at);
        }
        take(r, base + at);
        at = nl + 1;
        nl = view.indexOf(0x0a, at);
      }
      if (!overlong) lineStart = base + at;
      if (overlong || len - at >= JOURNAL_RECORD_MAX_BYTES) {
        // No record is this long: a later newline makes it a forged record (an error above), the
        // end of the file makes it a torn tail. Its bytes are not kept meanwhile.
        overlong = true;
        base += len;
        len = 0;
      } else {
        buf.copy(buf, 0, at, len);
        base += at;
        len -= at;
      }
    }
    const total = base + len;
    // A last line that is a whole record the bridge wrote (it ends where a record ends) and
    // authenticates as the next one lacks only its newline: it is kept (and the newline written),
    // never cut as torn. Anything else after the last newline is torn (or foreign) and cut.
    if (!overlong && len > 0 && buf[len - 1] === 0x7d) {
      let r: JournalRecord | null = null;
      try {
        r = verifyNext(buf.toString('utf8', 0, len));
      } catch {
        r = null;
      }
      if (r !== null) {
        take(r, lineStart);
        if (opts.readOnly) return { count: offsets.length, offsets, macs, size: total, truncatedBytes: 0 };
        await handle.write(NEWLINE, 0, 1, total);
        await handle.datasync();
        return { count: offsets.length, offsets, macs, size: total + 1, truncatedBytes: 0 };
      }
    }
    const end = lineStart;
    if (end < total && !opts.readOnly) {
      await handle.truncate(end);
      await handle.datasync();
    }
    return { count: offsets.length, offsets, macs, size: end, truncatedBytes: total - end };
  } finally {
    await handle.close();
  }
}

/** A scan stopped at damage (`untilDamage`): the authentic records before it, ending at `size`. */
function authenticPrefix(offsets: number[], macs: string[], size: number): ScanResult {
  return { count: offsets.length, offsets, macs, size, truncatedBytes: 0 };
}

const noop = () => {};

/**
 * The append side of an open journal. `append` seals the record (the in-memory state moves in
 * journal order at once) and queues it in the bridge-wide commit log, whose next batch makes it
 * durable with one O_DSYNC write of the log for every record of every run queued meanwhile (group
 * commit) and then writes it to `events.jsonl`. The journal file itself is fdatasync'd at the
 * commit log's checkpoints, before a snapshot and on close. Reads wait until appended records are
 * written.
 */
export class JournalWriter implements LoggedJournal {
  private last: Promise<void> = Promise.resolve();
  private syncs: Promise<void> = Promise.resolve();
  private closed = false;
  private closeError: Error | null = null;
  /** Lines durable in the commit log and not yet written to the file (commit-log.ts). */
  private unwritten: Buffer[] = [];
  private unwrittenBytes = 0;
  readonly logPrefix: Buffer;
  /** Past this size a record of the largest size might not fit under the journal's ceiling. */
  private readonly roomBelow: number;

  private constructor(
    private readonly handle: FileHandle,
    private readonly commitLog: CommitLog,
    private readonly key: Buffer,
    private readonly runId: string,
    public readonly offsets: number[],
    private head: string,
    private size: number,
    private readonly maxBytes: number,
  ) {
    this.logPrefix = Buffer.from(`${runId} `);
    this.roomBelow = maxBytes - JOURNAL_RECORD_MAX_BYTES;
  }

  static async open(
    key: Buffer,
    runId: string,
    path: string,
    scan: ScanResult,
    commitLog: CommitLog,
    genesis: string,
    maxBytes: number = JOURNAL_MAX_BYTES,
  ): Promise<JournalWriter> {
    const handle = await openNoFollow(path, READ_APPEND, 0o600);
    return new JournalWriter(
      handle,
      commitLog,
      key,
      runId,
      scan.offsets,
      scan.macs.at(-1) ?? genesis,
      scan.size,
      maxBytes,
    );
  }

  get count(): number {
    return this.offsets.length;
  }

  /**
   * The journal is at its byte ceiling: the next record might not fit. Checked before an event is
   * accepted (409 run_history_full), so nothing is stored; one comparison on the append path.
   */
  get full(): boolean {
    return this.size > this.roomBelow;
  }

  get headMac(): string {
    return this.head;
  }

  /** A config resealed before the first append (only then): record 0 will chain from its MAC. */
  rebase(genesis: string): void {
    if (this.count > 0) throw new Error('a journal with records cannot be rebased');
    this.head = genesis;
  }

  get broken(): Error | null {
    return this.commitLog.broken;
  }

  /**
   * Seals the next record and queues it; `durable` resolves once it is on disk. `eventJson` is the
   * event's canonical JSON as sealed, for answers that echo the event. An event whose canonical
   * JSON exceeds EVENT_MAX_BYTES throws EventTooLargeError, and nothing changes.
   */
  append(event: StoredEvent, claim: ArtifactClaim | null, seal: CompletionSeal | null = null): Appended {
    const broken = this.broken;
    if (broken) throw broken;
    const seq = this.offsets.length;
    const sealed = sealRecord(this.key, this.runId, seq, this.head, event, claim, seal);
    const over = eventBytesOverLimit(sealed.eventJson);
    if (over > 0) throw new EventTooLargeError(over);
    const bytes = Buffer.from(sealed.line);
    if (bytes.length > JOURNAL_RECORD_MAX_BYTES) throw new RangeError('journal record exceeds its ceiling');
    if (this.size + bytes.length > this.maxBytes) throw new RangeError('the journal is at its ceiling');
    this.offsets.push(this.size);
    this.size += bytes.length;
    this.head = sealed.mac;
    const durable = this.commitLog.append(this, bytes);
    this.last = durable;
    return { entry: { seq, event, claim, seal }, durable, eventJson: sealed.eventJson };
  }

  holdLines(lines: Buffer[]): boolean {
    for (const line of lines) {
      this.unwritten.push(line);
      this.unwrittenBytes += line.length;
    }
    return this.unwrittenBytes >= JOURNAL_WRITE_BEHIND_BYTES;
  }

  writeHeldLines(): void {
    if (this.unwritten.length === 0) return;
    const data = this.unwritten.length === 1 ? this.unwritten[0]! : Buffer.concat(this.unwritten);
    this.unwritten = [];
    this.unwrittenBytes = 0;
    writeAllSync(this.handle.fd, data);
  }

  /**
   * Every line acknowledged so far, in the file (not yet synced). Called when the run is dropped
   * from the open-run cache, so a reopen (which scans the file) never finds it short.
   */
  writeHeld(): void {
    this.commitLog.writeHeld(this);
  }

  /** Resolves when every record appended so far is durable or has failed (reads wait on this). */
  idle(): Promise<void> {
    return this.last.then(noop, noop);
  }

  /** fdatasync of events.jsonl itself (commit-log checkpoint, snapshot, close); serialized. */
  syncFile(): Promise<void> {
    if (this.closed) return this.closeError ? Promise.reject(this.closeError) : Promise.resolve();
    try {
      this.writeHeld();
    } catch (err) {
      return Promise.reject(err as Error);
    }
    this.syncs = this.syncs.then(noop, noop).then(() => datasync(this.handle.fd));
    return this.syncs;
  }

  /**
   * Reads and re-authenticates records [from, to) for an event page: each record's MAC binds its
   * run and position, and consecutive records must chain, so disk edits since open are caught.
   */
  async read(from: number, to: number): Promise<JournalEntry[]> {
    await this.idle();
    const broken = this.broken;
    if (broken) throw broken;
    this.writeHeld();
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

  /**
   * Closes the file after syncing it. If that sync fails, the commit log's next checkpoint fails
   * too (and it stops accepting appends) rather than dropping records only it holds durably. The
   * sync is unconditional: a sync requested earlier (a snapshot's) may have run before the lines
   * of records appended meanwhile reached the file, and once closed the journal is forgotten by
   * the checkpoint that would otherwise sync it before the log is emptied.
   */
  async close(): Promise<void> {
    await this.idle();
    try {
      await this.syncFile();
    } catch (err) {
      this.closeError = err instanceof Error ? err : new Error(String(err));
    }
    // A checkpoint may chain another sync while this one runs: wait until none is left, then mark
    // the writer closed in the same turn, so no sync can start on a closed descriptor.
    for (let s = this.syncs; ; s = this.syncs) {
      await s.then(noop, noop);
      if (s === this.syncs) break;
    }
    this.closed = true;
    if (!this.closeError) this.commitLog.forget(this);
    await this.handle.close();
  }
}
