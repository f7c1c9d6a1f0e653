import { constants } from 'node:fs';
import { appendFile, type FileHandle, lstat, open, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { COMMIT_LOG_CHECKPOINT_BYTES } from '../contract/index.js';
import { datasync, truncateToEmpty, writeAll } from './fd-io.js';
import { scanJournal } from './journal.js';
import { firstPrev, JournalAuthError, verifyLine } from './journal-record.js';
import { macEqual } from './mac.js';
import { LinkedFileError, openNoFollow } from './no-follow.js';
import { isCanonicalRunId, runPaths } from './paths.js';

const { O_APPEND, O_CREAT, O_DSYNC, O_RDWR, O_WRONLY } = constants;

export const COMMIT_LOG_FILE = 'commit.log';
export const DISPUTED_FILE = 'commit-disputed.jsonl';

/** What the commit log needs from an open journal: its run, its lines' file, and a sync of it. */
export interface LoggedJournal {
  /** `<runId> `, the prefix of the journal's lines in the log. */
  readonly logPrefix: Buffer;
  /** Takes lines now durable in the log; true once enough wait that they should be written. */
  holdLines(lines: Buffer[]): boolean;
  /** Writes (no sync) every line it has taken to its file. */
  writeHeldLines(): void;
  syncFile(): Promise<void>;
}

interface Batch {
  done: Promise<void>;
  resolve: () => void;
  reject: (err: Error) => void;
}

function newBatch(): Batch {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const done = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Every waiter handles the rejection; this only keeps an unobserved batch from crashing.
  done.catch(() => {});
  return { done, resolve, reject };
}

/** A run whose commit-log records could not be replayed: quarantined with this reason. */
export interface Disputed {
  runId: string;
  reason: string;
}

/**
 * `commit.log`: the bridge-wide write-ahead log that makes appends durable. Every sealed journal
 * record is queued here as `<runId> <record line>`; one write of this file, opened O_DSYNC so the
 * write returns only once it is on disk, then makes every record queued meanwhile durable,
 * whichever runs they belong to (group commit across runs). That is one thread-pool round trip
 * per batch, after which the batch is acknowledged. Each run's lines are written (no sync) to its
 * `events.jsonl` from the main thread behind the log: when no further batch is waiting, once
 * JOURNAL_WRITE_BEHIND_BYTES of them wait, or before the journal is read, synced or closed (a
 * failed write fails the log). The per-run journals are fdatasync'd at a checkpoint (every COMMIT_LOG_CHECKPOINT_BYTES of log, when a run is closed,
 * before its snapshot, and at shutdown), after which the log is emptied.
 * At startup, before any run is opened, records the journals lack (lost with the page cache in a
 * crash) are authenticated and appended to them; a record that does not fit its journal (bad MAC,
 * a gap, a different record at its position) is kept in `commit-disputed.jsonl` and its run is
 * quarantined, then and on every later start, while the other runs are replayed and served.
 */
export class CommitLog {
  private chunks: Buffer[] = [];
  /** Each journal's lines of the batch being gathered, held by the journal once it is durable. */
  private lines = new Map<LoggedJournal, Buffer[]>();
  private batch: Batch | null = null;
  private flushing: Promise<void> | null = null;
  private failure: Error | null = null;
  private size = 0;
  private dirty = new Set<LoggedJournal>();
  /** Journals holding lines that are durable in the log but not yet written to their file. */
  private holding = new Set<LoggedJournal>();

  private constructor(
    private readonly handle: FileHandle,
    private readonly checkpointBytes: number,
  ) {}

  /** Replays the log into the journals, empties it, and opens it for appending. */
  static async open(
    dataDir: string,
    key: Buffer,
    opts: { checkpointBytes?: number; log?: (msg: string) => void } = {},
  ): Promise<{ commitLog: CommitLog; disputed: Disputed[] }> {
    const path = join(dataDir, COMMIT_LOG_FILE);
    // O_DSYNC: every write is durable when it returns, as if followed by fdatasync.
    const handle = await open(path, O_RDWR | O_APPEND | O_CREAT | O_DSYNC, 0o600);
    try {
      const fresh = await replay(dataDir, key, await handle.readFile(), opts.log ?? (() => {}));
      const disputedPath = join(dataDir, DISPUTED_FILE);
      if (fresh.length > 0) {
        await appendFile(disputedPath, fresh.map((d) => `${JSON.stringify(d)}\n`).join(''), { mode: 0o600 });
        const h = await open(disputedPath, 'r');
        await h.sync();
        await h.close();
      }
      await handle.truncate(0);
      await handle.datasync();
      return {
        commitLog: new CommitLog(handle, opts.checkpointBytes ?? COMMIT_LOG_CHECKPOINT_BYTES),
        disputed: await readDisputed(disputedPath),
      };
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  get broken(): Error | null {
    return this.failure;
  }

  /** Queues one sealed record of `journal`; resolves once the log holds it durably. */
  append(journal: LoggedJournal, line: Buffer): Promise<void> {
    if (this.failure) throw this.failure;
    this.chunks.push(journal.logPrefix, line);
    const own = this.lines.get(journal);
    if (own) own.push(line);
    else this.lines.set(journal, [line]);
    this.batch ??= newBatch();
    this.flushing ??= this.flush();
    return this.batch.done;
  }

  private async flush(): Promise<void> {
    // Events parsed in this turn of the event loop join the first batch.
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (this.batch !== null) {
      const batch = this.batch;
      const data = Buffer.concat(this.chunks);
      const lines = this.lines;
      this.chunks = [];
      this.lines = new Map();
      this.batch = null;
      try {
        // One write of the log, durable when it returns (O_DSYNC): a single thread-pool round
        // trip for the whole batch, whose records are then acknowledged. Their journal lines are
        // held, and written here only for a journal past JOURNAL_WRITE_BEHIND_BYTES; a failed
        // write fails the log (below), not this batch, which is already durable.
        await writeAll(this.handle.fd, data);
        this.size += data.length;
        batch.resolve();
        for (const [journal, own] of lines) {
          this.dirty.add(journal);
          if (!journal.holdLines(own)) this.holding.add(journal);
          else {
            this.holding.delete(journal);
            journal.writeHeldLines();
          }
        }
        if (this.size >= this.checkpointBytes) await this.checkpoint();
      } catch (err) {
        this.fail(err);
        batch.reject(this.failure!);
      }
    }
    // No batch is waiting: the journals' held lines are written now, in what would be idle time.
    // While batches follow each other a journal's lines are held (JOURNAL_WRITE_BEHIND_BYTES at
    // most), so a run is not written once per batch: the log already holds them durably.
    try {
      this.writeAllHeld();
    } catch (err) {
      this.fail(err);
    }
    this.flushing = null;
  }

  /** Writes to their files the lines every journal holds back. */
  private writeAllHeld(): void {
    for (const journal of this.holding) {
      this.holding.delete(journal);
      journal.writeHeldLines();
    }
  }

  /**
   * A journal's own lines written before it is read, synced or closed. A failure leaves its file
   * behind what was acknowledged, so it fails the log: every further append is refused until a
   * restart replays the log into the journal.
   */
  writeHeld(journal: LoggedJournal): void {
    if (!this.holding.delete(journal)) return;
    try {
      journal.writeHeldLines();
    } catch (err) {
      this.fail(err);
      throw this.failure;
    }
  }

  /**
   * Durability of everything after the last good write is unknown: refuse all further appends
   * (the batch being gathered fails too) until a restart replays the log.
   */
  private fail(err: unknown): void {
    this.failure ??= err instanceof Error ? err : new Error(String(err));
    (this.batch as Batch | null)?.reject(this.failure);
    this.batch = null;
    this.chunks = [];
    this.lines = new Map();
  }

  /**
   * Makes every journal written since the last checkpoint durable on its own, then empties the
   * log. Runs between batches, so no log write is in flight; records sealed meanwhile mark their
   * journals dirty again and reach the emptied log in the next batch.
   */
  private async checkpoint(): Promise<void> {
    this.writeAllHeld();
    const journals = [...this.dirty];
    this.dirty.clear();
    await Promise.all(journals.map((j) => j.syncFile()));
    await truncateToEmpty(this.handle.fd);
    await datasync(this.handle.fd);
    this.size = 0;
  }

  /** A journal closed after syncing its own file no longer needs the checkpoint. */
  forget(journal: LoggedJournal): void {
    this.dirty.delete(journal);
    this.holding.delete(journal);
  }

  /** Resolves when every queued record is durable. */
  async idle(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  async close(): Promise<void> {
    await this.idle();
    if (!this.failure) await this.checkpoint();
    await this.handle.close();
  }
}

/** The complete lines of a log as `<runId> <record>`; a torn last line was never acknowledged. */
function* logLines(buf: Buffer): Generator<{ runId: string; record: string; line: string }> {
  const end = buf.lastIndexOf(0x0a) + 1;
  for (const line of buf.toString('utf8', 0, end).split('\n')) {
    if (line === '') continue;
    const space = line.indexOf(' ');
    yield { runId: space > 0 ? line.slice(0, space) : '', record: line.slice(space + 1), line };
  }
}

/**
 * For offline verification: each run's logged records (a crash image's log still holds records a
 * journal may lack; `judgeLogRecords` checks them as startup would) and the disputed records, read
 * without writing anything.
 */
export async function readLogOffline(
  dataDir: string,
): Promise<{ logged: Map<string, string[]>; disputed: Disputed[] }> {
  const logged = new Map<string, string[]>();
  const buf = await readFile(join(dataDir, COMMIT_LOG_FILE)).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return Buffer.alloc(0);
    throw err;
  });
  for (const { runId, record } of logLines(buf)) {
    const records = logged.get(runId) ?? [];
    records.push(record);
    logged.set(runId, records);
  }
  return { logged, disputed: await readDisputed(join(dataDir, DISPUTED_FILE)) };
}

async function readDisputed(path: string): Promise<Disputed[]> {
  const text = await readFile(path, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return '';
    throw err;
  });
  const out: Disputed[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    try {
      const d = JSON.parse(line) as { runId?: unknown; reason?: unknown };
      if (typeof d.runId === 'string' && typeof d.reason === 'string')
        out.push({ runId: d.runId, reason: d.reason });
    } catch {
      // a torn last line of an interrupted append; the runs named before it are still listed
    }
  }
  return out;
}

/**
 * Appends to each journal the log records it lacks. Returns the records that could not be
 * replayed (with their original lines, so nothing a later inspection needs is lost).
 */
async function replay(
  dataDir: string,
  key: Buffer,
  buf: Buffer,
  log: (msg: string) => void,
): Promise<(Disputed & { line: string })[]> {
  const byRun = new Map<string, string[]>();
  const disputed: (Disputed & { line: string })[] = [];
  for (const { runId, record, line } of logLines(buf)) {
    if (!isCanonicalRunId(runId)) {
      disputed.push({ runId, reason: 'commit.log holds a record without a valid run ID', line });
      continue;
    }
    const lines = byRun.get(runId) ?? [];
    lines.push(record);
    byRun.set(runId, lines);
  }
  for (const [runId, lines] of byRun) {
    const problem = await replayRun(dataDir, key, runId, lines);
    if (problem) {
      log(`run ${runId}: ${problem.reason}`);
      for (const line of lines) disputed.push({ runId, reason: problem.reason, line });
    } else if (problem === null) {
      log(`run ${runId}: replayed records from commit.log`);
    }
  }
  return disputed;
}

/**
 * null: records appended; undefined: nothing was missing; otherwise why the run is disputed.
 * Either way the journal is fdatasync'd before the caller empties the log: after a kill -9 the
 * page cache may hold records the log made durable and the journal file never synced, so the log
 * may be emptied only once the journal itself is on disk.
 */
async function replayRun(
  dataDir: string,
  key: Buffer,
  runId: string,
  lines: string[],
): Promise<{ reason: string } | null | undefined> {
  const path = runPaths(dataDir, runId).journal;
  // One run's damaged journal must not stop startup for every run: a journal that is missing or
  // not a regular file (a directory, a FIFO that would block the scan, a link) disputes its run.
  const entry = await lstat(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return null;
    throw err;
  });
  if (!entry) return { reason: 'commit.log names a run without a journal' };
  if (!entry.isFile()) return { reason: 'commit.log cannot be replayed: the journal is not a regular file' };
  let scan: Awaited<ReturnType<typeof scanJournal>>;
  try {
    scan = await scanJournal(key, runId, path);
  } catch (err) {
    // The run's own journal fails authentication: opening it quarantines the run with that reason.
    if (err instanceof JournalAuthError) return { reason: `commit.log cannot be replayed: ${err.message}` };
    if (err instanceof LinkedFileError)
      return { reason: 'commit.log cannot be replayed: the journal is not a regular file' };
    throw err;
  }
  const judged = judgeLogRecords(key, runId, lines, scan.macs);
  if ('reason' in judged) return judged;
  const { missing } = judged;
  const h = await openNoFollow(path, O_WRONLY | O_APPEND);
  try {
    if (missing.length > 0) await h.appendFile(missing.map((line) => `${line}\n`).join(''));
    await h.datasync();
  } finally {
    await h.close();
  }
  return missing.length > 0 ? null : undefined;
}

/**
 * Judges one run's logged records against its journal's MACs, as startup replay does (and
 * `harness verify`, read-only): each record at a position the journal holds must be the journal's
 * record there; the rest must continue the chain without a gap and authenticate. Returns why the
 * run is disputed, or the records its journal lacks. `macs` is not changed.
 */
export function judgeLogRecords(
  key: Buffer,
  runId: string,
  lines: readonly string[],
  macs: readonly string[],
): { reason: string } | { missing: string[] } {
  // An empty journal: record 0's claimed start is taken as it is (its MAC binds it); opening the
  // run checks that it chains from the run's config.
  let head = macs.at(-1) ?? '';
  const missing: string[] = [];
  const added: string[] = [];
  const macAt = (seq: number) => (seq < macs.length ? macs[seq] : added[seq - macs.length]) ?? '';
  for (const line of lines) {
    let claimed: { seq?: unknown; mac?: unknown };
    try {
      claimed = JSON.parse(line) as { seq?: unknown; mac?: unknown };
    } catch {
      return { reason: 'commit.log holds a record that is not JSON' };
    }
    const seq = claimed.seq;
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0)
      return { reason: 'commit.log holds a record without a position' };
    const next = macs.length + added.length;
    if (seq < next) {
      if (typeof claimed.mac !== 'string' || !macEqual(macAt(seq), claimed.mac))
        return { reason: `commit.log record ${seq} differs from the journal's` };
      continue;
    }
    if (seq > next) return { reason: `commit.log skips from journal record ${next} to ${seq}` };
    try {
      head = verifyLine(key, runId, line, seq, seq === 0 ? firstPrev(line, undefined) : head).mac;
    } catch (err) {
      return { reason: `commit.log record ${seq} fails authentication (${(err as Error).message})` };
    }
    missing.push(line);
    added.push(head);
  }
  return { missing };
}
