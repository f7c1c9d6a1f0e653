import type { FileHandle } from 'node:fs/promises';
import type { ArtifactClaim, JournalEntry, RecordSeal, StoredEvent } from '../contract/index.js';
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
  sealRecord,
  verifyLine,
} from './journal-record.js';
import type { ScanResult } from './journal-scan.js';
import { openNoFollow, READ_APPEND } from './no-follow.js';
import type { Appended, RunJournal } from './types.js';

/**
 * `events.jsonl` as it is written: the writer that appends sealed records to an open journal
 * (journal-scan.ts authenticates a whole journal when it is opened; journal-record.ts has the
 * record format). The writer depends on the commit log, which depends on the scan for its replay,
 * never the other way round.
 */

export type { Appended };

const noop = () => {};

/**
 * The append side of an open journal. `append` seals the record (the in-memory state moves in
 * journal order at once) and queues it in the bridge-wide commit log, whose next batch makes it
 * durable with one O_DSYNC write of the log for every record of every run queued meanwhile (group
 * commit) and then writes it to `events.jsonl`. The journal file itself is fdatasync'd at the
 * commit log's checkpoints, before a snapshot and on close. Reads wait until appended records are
 * written.
 */
export class JournalWriter implements LoggedJournal, RunJournal {
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
    readonly file: string,
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
      path,
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
  append(event: StoredEvent, claim: ArtifactClaim | null, seal: RecordSeal | null = null): Appended {
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
