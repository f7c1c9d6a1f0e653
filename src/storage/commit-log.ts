import { constants } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { COMMIT_LOG_CHECKPOINT_BYTES } from '../contract/index.js';
import { COMMIT_LOG_FILE, type Disputed, replayLog } from './commit-log-replay.js';
import { datasync, truncateTo, truncateToEmpty, writeAll } from './fd-io.js';
import { LeaseLostError } from './lease.js';
import { openNoFollow } from './no-follow.js';
import { rethrowAs, StorageFailure } from './storage-failure.js';

const { O_APPEND, O_CREAT, O_DSYNC, O_RDWR } = constants;

/** What the commit log needs from an open journal: its run, its lines' file, and a sync of it. */
export interface LoggedJournal {
  /** `<runId> `, the prefix of the journal's lines in the log. */
  readonly logPrefix: Buffer;
  /** Its `events.jsonl`, named when writing or syncing it fails. */
  readonly file: string;
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

/**
 * `commit.log`: the bridge-wide write-ahead log that makes appends durable. Every sealed journal
 * record is queued here as `<runId> <record line>`; one write of this file, opened O_DSYNC so the
 * write returns only once it is on disk, then makes every record queued meanwhile durable,
 * whichever runs they belong to (group commit across runs). That is one thread-pool round trip
 * per batch, after which the batch is acknowledged. Each run's lines are written (no sync) to its
 * `events.jsonl` from the main thread behind the log: when no further batch is waiting, once
 * JOURNAL_WRITE_BEHIND_BYTES of them wait, or before the journal is read, synced or closed (a
 * failed write fails the log). The per-run journals are fdatasync'd at a checkpoint (every
 * COMMIT_LOG_CHECKPOINT_BYTES of log, when a run is closed, before its snapshot, and at
 * shutdown), after which the log is emptied. At startup, before any run is opened, the log is
 * replayed into the journals (commit-log-replay.ts).
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
    private readonly path: string,
    private readonly handle: FileHandle,
    private readonly checkpointBytes: number,
    private readonly fence: () => void,
    private readonly beforeEmpty: () => Promise<void>,
    private readonly onFailure: (err: Error) => void,
    private readonly onBatch: (records: number) => void,
  ) {}

  /** Replays the log into the journals, empties it, and opens it for appending. */
  static async open(
    dataDir: string,
    key: Buffer,
    opts: {
      checkpointBytes?: number;
      log?: (msg: string) => void;
      fence?: () => void;
      /** Runs at each checkpoint once the journals are synced, before the log is emptied. */
      beforeEmpty?: () => Promise<void>;
      /**
       * Told once, when the log fails: a StorageFailure (a write or sync failed) or the
       * LeaseLostError of the fence.
       */
      onFailure?: (err: Error) => void;
      /** Told the number of records of each batch made durable (the bridge's metrics). */
      onBatch?: (records: number) => void;
    } = {},
  ): Promise<{ commitLog: CommitLog; disputed: Disputed[]; named: string[] }> {
    const path = join(dataDir, COMMIT_LOG_FILE);
    // O_DSYNC: every write is durable when it returns, as if followed by fdatasync.
    const handle = await openNoFollow(path, O_RDWR | O_APPEND | O_CREAT | O_DSYNC, 0o600);
    try {
      const { disputed, named } = await replayLog(
        dataDir,
        key,
        await handle.readFile(),
        opts.log ?? (() => {}),
      );
      await handle.truncate(0);
      await handle.datasync();
      return {
        commitLog: new CommitLog(
          path,
          handle,
          opts.checkpointBytes ?? COMMIT_LOG_CHECKPOINT_BYTES,
          opts.fence ?? (() => {}),
          opts.beforeEmpty ?? (async () => {}),
          opts.onFailure ?? (() => {}),
          opts.onBatch ?? (() => {}),
        ),
        disputed,
        named,
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
      // Two chunks a record: the run's prefix and its line.
      const records = this.chunks.length / 2;
      const lines = this.lines;
      this.chunks = [];
      this.lines = new Map();
      this.batch = null;
      try {
        // One write of the log, durable when it returns (O_DSYNC): a single thread-pool round
        // trip for the whole batch, whose records are then acknowledged. Their journal lines are
        // held, and written here only for a journal past JOURNAL_WRITE_BEHIND_BYTES; a failed
        // write fails the log (below), not this batch, which is already durable.
        this.fenced();
        await this.writeBatch(data);
        this.size += data.length;
        batch.resolve();
        this.onBatch(records);
        for (const [journal, own] of lines) {
          this.dirty.add(journal);
          this.holding.add(journal);
          if (journal.holdLines(own)) this.writeHeld(journal);
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

  /**
   * One batch's write. A write that fails partway (a full disk, a file-size limit) may have left
   * some of the batch's records whole in the log; none was acknowledged, so the log is cut back
   * to where the batch began, or the next start would replay records their clients were told
   * failed.
   */
  private async writeBatch(data: Buffer): Promise<void> {
    try {
      await writeAll(this.handle.fd, data);
    } catch (err) {
      await truncateTo(this.handle.fd, this.size)
        .then(() => datasync(this.handle.fd))
        .catch(() => {});
      throw StorageFailure.of('writing', this.path, err);
    }
  }

  /** A journal's held lines written to its file; a failure names the file. */
  private writeLines(journal: LoggedJournal): void {
    try {
      journal.writeHeldLines();
    } catch (err) {
      throw StorageFailure.of('writing', journal.file, err);
    }
  }

  /** Writes to their files the lines every journal holds back. */
  private writeAllHeld(): void {
    if (this.holding.size > 0) this.fenced();
    for (const journal of this.holding) {
      this.holding.delete(journal);
      this.writeLines(journal);
    }
  }

  /**
   * A journal's own lines written before it is read, synced or closed. A failure leaves its file
   * behind what was acknowledged, so it fails the log: every further append is refused, and the
   * bridge stops so that a restart replays the log into the journal.
   */
  writeHeld(journal: LoggedJournal): void {
    if (!this.holding.has(journal)) return;
    this.fenced();
    this.holding.delete(journal);
    try {
      this.writeLines(journal);
    } catch (err) {
      this.fail(err);
      throw this.failure;
    }
  }

  /**
   * The data directory is still this bridge's (its lease, lease.ts): checked before every write of
   * the log or a journal and before the log is emptied. Once another bridge holds it (the fence
   * then throws for good), this one writes nothing more: the log fails, and the lines journals
   * hold back are never written, since the new holder has replayed them from the log and writing
   * them again would fork the journals.
   */
  private fenced(): void {
    try {
      this.fence();
    } catch (err) {
      this.fail(err);
      throw this.failure;
    }
  }

  /** False, with the log failed as `fenced` fails it, once the lease is no longer this bridge's. */
  holdsLease(): boolean {
    try {
      this.fenced();
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Durability of everything after the last good write is unknown: refuse all further appends
   * (the batch being gathered fails too) until a restart replays the log. The first failure is
   * reported (`onFailure`), so the bridge stops and its supervisor restarts it.
   */
  private fail(err: unknown): void {
    if (this.failure === null) {
      this.failure = StorageFailure.of('committing records to', this.path, err);
      this.onFailure(this.failure);
    }
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
    await Promise.all(journals.map((j) => j.syncFile().catch(rethrowAs('syncing', j.file))));
    await this.beforeEmpty();
    this.fenced();
    await truncateToEmpty(this.handle.fd)
      .then(() => datasync(this.handle.fd))
      .catch(rethrowAs('emptying', this.path));
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
    try {
      if (!this.failure) await this.checkpoint();
    } catch (err) {
      // A lease lost meanwhile has failed the log; the bridge is closing because of it.
      if (!(err instanceof LeaseLostError)) throw err;
    } finally {
      await this.handle.close();
    }
  }
}
