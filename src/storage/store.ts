import { join } from 'node:path';
import type {
  ArtifactClaim,
  JournalEntry,
  RecordSeal,
  RunConfig,
  RunSummary,
  StoredEvent,
} from '../contract/index.js';
import {
  applyEntry,
  emptyState,
  JOURNAL_MAX_BYTES,
  OPEN_RUN_CACHE,
  RUN_DIRECTORY_MAX,
  SNAPSHOT_EVERY,
  SNAPSHOT_MAX_BYTES,
} from '../contract/index.js';
import { CommitLog } from './commit-log.js';
import type { Disputed } from './commit-log-replay.js';
import { appendDriftQuarantines } from './drift-quarantines.js';
import { IdIndex } from './id-index.js';
import { type Appended, JournalWriter } from './journal.js';
import { JournalAuthError } from './journal-record.js';
import type { ScanResult } from './journal-scan.js';
import type { LayoutConfigs, RunDirListing } from './layout.js';
import { trimOpenRuns } from './open-runs.js';
import { runPaths } from './paths.js';
import { type QuarantineKind, Quarantines } from './quarantine.js';
import { EPOCH, startupRuns } from './run-attribution.js';
import {
  configMac,
  createRunFiles,
  type FileRun,
  openRunFiles,
  RunIntegrityError,
  removeRunDirectory,
  writeConfig,
} from './run-files.js';
import { RunIndex, unreadEntry } from './run-index.js';
import { IndexFile, type IndexRead, RUN_INDEX_FILE, readIndexFile } from './run-index-file.js';
import { SNAPSHOT_SCHEMA, writeSnapshot } from './snapshot.js';
import { rethrowAs } from './storage-failure.js';
import type { LoadResult, QuarantineInfo, RunStorage } from './types.js';

export type { LoadResult, QuarantineInfo } from './types.js';

/** Records since a run's snapshot that make its eviction write one (see `evict`). */
const EVICTION_SNAPSHOT_MIN = 256;
const noop = () => {};

/** A fresh empty scan per new run: the writer owns and grows its `offsets` array. */
const emptyScan = (): ScanResult => ({ count: 0, offsets: [], macs: [], size: 0, truncatedBytes: 0 });

export interface StoreOptions {
  dataDir: string;
  integrityKey: Buffer;
  trustPin: string;
  cacheSize?: number;
  /**
   * The configs startup authenticated and the run directories it listed (storage/layout.ts), so
   * each is read once.
   */
  configs?: LayoutConfigs;
  listing?: RunDirListing;
  /**
   * The run index file as startup read it (run-index-file.ts; read before the layout check, which
   * then reads only the run directories it lacks). Absent: read here.
   */
  runIndex?: IndexRead;
  /** Each journal's byte ceiling (default JOURNAL_MAX_BYTES; tests make it small). */
  journalMaxBytes?: number;
  /** The run.json ceiling, for writing and reading (default SNAPSHOT_MAX_BYTES; tests make it small). */
  snapshotMaxBytes?: number;
  /**
   * The most runs the data directory may hold (default RUN_DIRECTORY_MAX; tests make it small).
   * Startup must be given the same figure (storage/layout.ts).
   */
  maxRuns?: number;
  /** Commit-log size that triggers a checkpoint (tests make it small). */
  checkpointBytes?: number;
  log?: (msg: string) => void;
  /** Throws once the data directory's lease is no longer this bridge's (`Lease.fence`). */
  fence?: () => void;
  /**
   * Told once when the commit log fails (CommitLog.open's `onFailure`): the bridge then stops, and
   * its restart replays the log.
   */
  onFailure?: (err: Error) => void;
  /** Told the record count of each commit-log batch made durable (the bridge's metrics). */
  onBatch?: (records: number) => void;
  /** Told once per run that becomes quarantined, with why in a word (the bridge's metrics). */
  onQuarantine?: (runId: string, kind: QuarantineKind) => void;
  /** Told each time a run leaves the open-run cache to make room (`harness bridge`'s heap-growth governor). */
  onEvict?: () => void;
}

export type { QuarantineKind } from './quarantine.js';

/**
 * The run store: an index of runs in creation order, a bounded cache of open, verified runs, and
 * the quarantine list. Callers serialize operations per run (src/server/run-queue.ts) and hold a
 * pin while using an FileRun. The surface (load, create, append, read, list) is narrow enough for
 * a hosted database to implement later.
 */
export class RunStore implements RunStorage<FileRun> {
  private readonly index: RunIndex;
  private readonly cache = new Map<string, FileRun>();
  private readonly quarantined: Quarantines;
  private readonly background = new Set<Promise<void>>();
  /** Each open run's latest snapshot write: a run's writes follow one another, and its close waits. */
  private readonly snapshots = new WeakMap<FileRun, Promise<void>>();
  private readonly cacheSize: number;
  private readonly log: (msg: string) => void;

  /** The byte ceilings this store enforces on each journal and snapshot (health reports them). */
  get ceilings(): { journalMaxBytes: number; snapshotMaxBytes: number; maxRuns: number } {
    return {
      journalMaxBytes: this.opts.journalMaxBytes ?? JOURNAL_MAX_BYTES,
      snapshotMaxBytes: this.opts.snapshotMaxBytes ?? SNAPSHOT_MAX_BYTES,
      maxRuns: this.index.maxRuns,
    };
  }

  private constructor(
    private readonly opts: StoreOptions,
    private readonly commitLog: CommitLog,
  ) {
    this.cacheSize = opts.cacheSize ?? OPEN_RUN_CACHE;
    this.index = new RunIndex(opts.maxRuns ?? RUN_DIRECTORY_MAX);
    this.log = opts.log ?? (() => {});
    this.quarantined = new Quarantines(this.log, opts.onQuarantine);
  }

  /** Replays the commit log, then indexes the runs (startup has already refused legacy layouts). */
  static async open(opts: StoreOptions): Promise<RunStore> {
    const path = join(opts.dataDir, RUN_INDEX_FILE);
    const read = opts.runIndex ?? (await readIndexFile(path, opts.integrityKey, opts.trustPin));
    // The index file is synced at every checkpoint, before the log is emptied: what the log no
    // longer holds, the index holds durably.
    let store: RunStore | null = null;
    const beforeEmpty = async () => {
      if (store) await store.index.sync().catch(rethrowAs('syncing', path));
    };
    // Acknowledged records the journals lack (a crash lost them with the page cache) come back
    // from the commit log before any run is read.
    const { commitLog, disputed, named } = await CommitLog.open(opts.dataDir, opts.integrityKey, {
      ...opts,
      beforeEmpty,
    });
    // What startup read (every config, the index file's maps) is not kept past it.
    const { configs, listing, runIndex: _, ...kept } = opts;
    store = new RunStore(kept, commitLog);
    try {
      await store.buildIndex(read, { configs, listing }, disputed, named);
      // Written whole when it was not read, or when superseded entries outnumber the live ones.
      const file = await IndexFile.open(path, opts.integrityKey, opts.trustPin, read);
      await store.index.persist(file, read.kind !== 'read' || read.lines > 2 * read.runs.size + 4096);
    } catch (err) {
      await commitLog.close();
      await store.index.close();
      throw err;
    }
    return store;
  }

  /**
   * The index and quarantines as the data directory has them (run-attribution.ts, startupRuns):
   * the index file's entries, and the run directories it lacks read in full. A run the commit log
   * named at this start may have records its entry predates: its summary is read from the run.
   */
  private async buildIndex(
    read: IndexRead,
    layout: { configs: LayoutConfigs | undefined; listing: RunDirListing | undefined },
    disputed: Disputed[],
    logged: string[],
  ): Promise<void> {
    const { dataDir, integrityKey } = this.opts;
    if (read.kind === 'untrusted') this.log(`run index not used (${read.why}): every run directory is read`);
    const indexed = read.kind === 'read' ? read : null;
    const { runs, added, quarantines } = await startupRuns(
      dataDir,
      integrityKey,
      layout.configs,
      disputed,
      logged,
      indexed,
      layout.listing,
    );
    this.index.load(runs);
    for (const runId of [...logged, ...disputed.map((d) => d.runId)]) this.index.forgetSummary(runId);
    for (const [runId, reason] of quarantines) this.quarantine(runId, reason);
    // Runs the index file lacks are appended to it.
    if (indexed !== null) this.index.note(added.map((e) => e.runId));
  }

  /**
   * The list summary of a run as of its latest durable record, without opening it: null when it
   * must be read from the run (quarantined, or not summarized since this start).
   */
  indexedSummary(runId: string): RunSummary | null {
    return this.quarantined.has(runId) ? null : this.index.summaryOf(runId);
  }

  nextCreatedAt(): string {
    return this.index.nextCreatedAt();
  }

  get size(): number {
    return this.index.size;
  }

  get failure(): Error | null {
    return this.commitLog.broken;
  }

  /** A page of run IDs in creation order (stable offsets). */
  page(offset: number, limit: number): string[] {
    return this.index.page(offset, limit);
  }

  has(runId: string): boolean {
    return this.index.has(runId);
  }

  quarantine(runId: string, reason: string, kind: QuarantineKind = 'integrity'): QuarantineInfo {
    const info = this.quarantined.add(runId, reason, kind);
    const cached = this.cache.get(runId);
    if (cached && cached.pins === 0) this.evict(cached);
    return info;
  }

  /**
   * Quarantines a completed run for drift a read found, and records why in the data directory
   * (drift-quarantines.ts), synced before the read answers, so the quarantine outlasts a restart.
   */
  async quarantineForDrift(runId: string, reasons: string[]): Promise<void> {
    for (const reason of reasons) this.quarantine(runId, reason, 'drift');
    const createdAt = this.index.createdAt(runId);
    if (reasons.length === 0 || createdAt === undefined) return;
    const kept = this.quarantined.of(runId)?.reasons ?? [];
    try {
      this.requireLease();
      await appendDriftQuarantines(
        this.opts.dataDir,
        kept.map((reason) => ({ runId, createdAt, reason })),
      );
    } catch (err) {
      // Quarantined all the same while this bridge runs; only the record for the next start is lost.
      this.log(`run ${runId}: its drift quarantine could not be recorded: ${(err as Error).message}`);
    }
  }

  quarantineOf(runId: string): QuarantineInfo | undefined {
    return this.quarantined.of(runId);
  }

  /** Opens (or finds cached) a run and pins it; the caller must `release` it. */
  async load(runId: string): Promise<LoadResult<FileRun>> {
    if (this.failure) throw this.failure;
    const entry = this.index.get(runId);
    if (!entry) return { kind: 'missing' };
    const q = this.quarantined.of(runId);
    if (q) return { kind: 'quarantined', runId, createdAt: entry.createdAt, quarantine: q };
    let run = this.cache.get(runId);
    if (run?.journal.broken) {
      this.evict(run);
      run = undefined;
    }
    if (!run) {
      try {
        const opened = await openRunFiles(
          runId,
          runPaths(this.opts.dataDir, runId),
          this.opts.integrityKey,
          this.opts.trustPin,
          this.commitLog,
          { ...this.opts, indexed: entry },
        );
        run = opened.run;
        // Opened, every record on file is durable: an entry not summarized since this start, or
        // behind the journal, catches up.
        if (entry.summary === null || entry.count !== run.journal.count) this.index.record(run);
        if (opened.truncatedBytes > 0)
          this.log(`run ${runId}: truncated ${opened.truncatedBytes} torn bytes`);
        if (opened.snapshotStale) this.snapshotLater(run);
      } catch (err) {
        if (!(err instanceof RunIntegrityError)) throw err;
        const quarantine = this.quarantine(runId, err.message);
        return { kind: 'quarantined', runId, createdAt: entry.createdAt, quarantine };
      }
      // Pinned before the cache is trimmed: a cache full of pinned runs must not evict (and start
      // closing) the run this load is about to hand out.
      run.pins++;
      this.cache.set(runId, run);
      this.trimCache();
      return { kind: 'open', run };
    }
    this.cache.delete(runId);
    this.cache.set(runId, run);
    run.pins++;
    return { kind: 'open', run };
  }

  release(run: FileRun): void {
    run.pins--;
    this.trimCache();
  }

  /** Creates a run, within the run ceiling (run-index.ts): past it nothing is written. */
  async create(config: RunConfig): Promise<FileRun> {
    this.requireLease();
    const paths = runPaths(this.opts.dataDir, config.runId);
    try {
      await this.index.create(unreadEntry(config.runId, config.createdAt), () =>
        createRunFiles(this.opts.dataDir, paths, this.opts.integrityKey, config),
      );
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
      // The run's directory exists though the index has no run for it: startup found no
      // authentic config naming this run there (indexed under the directory's name instead).
      // Nothing is written over it; the run is quarantined, as every later request will see.
      const reason = 'its run directory holds files that no authentic config attributes to this run';
      this.index.add(unreadEntry(config.runId, EPOCH));
      this.quarantine(config.runId, reason, 'orphan_directory');
      throw new RunIntegrityError(reason);
    }
    let journal: JournalWriter;
    try {
      journal = await JournalWriter.open(
        this.opts.integrityKey,
        config.runId,
        paths.journal,
        emptyScan(),
        this.commitLog,
        configMac(this.opts.integrityKey, config),
        this.opts.journalMaxBytes,
      );
    } catch (err) {
      // Out of descriptors, say: the request fails, and the run it would have created is not left
      // behind (an empty run a retry would find already existing).
      this.index.remove(config.runId);
      await removeRunDirectory(this.opts.dataDir, paths.dir, config.runId);
      throw err;
    }
    const run: FileRun = {
      runId: config.runId,
      paths,
      config,
      state: emptyState(config.runId, config.createdAt),
      journal,
      ids: new IdIndex(),
      sinceSnapshot: 0,
      pins: 1,
    };
    this.cache.set(config.runId, run);
    this.trimCache();
    this.index.record(run);
    return run;
  }

  /** Run files are written only while the data directory's lease is this bridge's. */
  private requireLease(): void {
    if (!this.commitLog.holdsLease()) throw this.commitLog.broken;
  }

  /**
   * Removes a run that was created for a request and then refused before its first append, so a
   * refused first event stores nothing (removeRunDirectory: crash-safe).
   */
  async discardUnused(run: FileRun): Promise<void> {
    if (run.journal.count > 0 || this.cache.get(run.runId) !== run) return;
    this.cache.delete(run.runId);
    this.index.remove(run.runId);
    await run.journal.close();
    await removeRunDirectory(this.opts.dataDir, run.paths.dir, run.runId);
  }

  /** Rewrites the sealed config; allowed only before the first journal append (write-once fields). */
  async sealConfig(run: FileRun, config: RunConfig): Promise<void> {
    if (run.journal.count > 0) throw new Error('run-config.json is immutable after the first append');
    this.requireLease();
    await writeConfig(run.paths.config, this.opts.integrityKey, config);
    run.config = config;
    run.journal.rebase(configMac(this.opts.integrityKey, config));
    this.index.record(run);
  }

  /** Appends one event; the state changes now, the promise settles when the record is durable. */
  append(
    run: FileRun,
    event: StoredEvent,
    claim: ArtifactClaim | null,
    seal: RecordSeal | null = null,
  ): Appended {
    const result = run.journal.append(event, claim, seal);
    applyEntry(run.state, result.entry);
    run.ids.add(event.id, result.entry.seq);
    if (++run.sinceSnapshot >= SNAPSHOT_EVERY) this.snapshotLater(run);
    // The index takes the run once this record is durable, unless a later record is then still
    // on its way (that record's turn comes): an entry is never ahead of its journal.
    const count = run.journal.count;
    result.durable.then(() => {
      if (run.journal.count === count) this.index.record(run);
    }, noop);
    return result;
  }

  /**
   * Reads re-authenticate the records they return: a journal edited on disk since the run was
   * opened quarantines the run here, exactly as it would have on open.
   */
  async read(run: FileRun, from: number, to: number): Promise<JournalEntry[]> {
    try {
      return await run.journal.read(from, to);
    } catch (err) {
      if (!(err instanceof JournalAuthError)) throw err;
      const reason = `events.jsonl: ${err.message}`;
      this.quarantine(run.runId, reason, 'journal_read');
      throw new RunIntegrityError(reason);
    }
  }

  /** Writes the snapshot for the current prefix once that prefix is durable (never ahead of it). */
  private snapshotLater(run: FileRun): void {
    run.sinceSnapshot = 0;
    const snap = {
      schema: SNAPSHOT_SCHEMA,
      runId: run.runId,
      count: run.journal.count,
      headMac: run.journal.headMac,
      state: structuredClone(run.state),
    };
    const task = (this.snapshots.get(run) ?? Promise.resolve())
      .then(() => run.journal.idle())
      .then(async () => {
        if (run.journal.broken) return;
        // Never ahead of the journal file on disk, whatever the commit log holds.
        await run.journal.syncFile();
        if (!this.commitLog.holdsLease()) return;
        const key = this.opts.integrityKey;
        if (!(await writeSnapshot(run.paths.snapshot, key, snap, this.opts.snapshotMaxBytes))) {
          this.log(
            `run ${run.runId}: run.json not rewritten at ${snap.count} events: it would exceed its ceiling; the journal after the previous snapshot is replayed on open`,
          );
        }
      })
      .catch((err: Error) => this.log(`run ${run.runId}: snapshot write failed: ${err.message}`))
      .finally(() => this.background.delete(task));
    this.snapshots.set(run, task);
    this.background.add(task);
  }

  private trimCache(): void {
    trimOpenRuns(this.cache, this.cacheSize, (run) => {
      this.evict(run);
      this.opts.onEvict?.();
    });
  }

  /**
   * Closes a run leaving the cache. Its snapshot is written only when reopening it would otherwise
   * replay EVICTION_SNAPSHOT_MIN records or more (and always at shutdown): a burst of short runs
   * passing through the cache must not cost two syncs each.
   */
  private evict(run: FileRun, snapshot = run.sinceSnapshot >= EVICTION_SNAPSHOT_MIN): void {
    this.cache.delete(run.runId);
    // Its lines reach the file now, before a reopen of the run could scan it. A failed write has
    // failed the commit log, which every later load and append reports.
    try {
      run.journal.writeHeld();
    } catch {}
    // A quarantined run's state is not trusted: never seal it into a snapshot.
    if (snapshot && run.sinceSnapshot > 0 && !run.journal.broken && !this.quarantined.has(run.runId))
      this.snapshotLater(run);
    const closing = (this.snapshots.get(run) ?? Promise.resolve())
      .then(() => run.journal.close())
      .catch(() => {});
    this.background.add(closing);
    void closing.finally(() => this.background.delete(closing));
  }

  /** Flushes snapshots and closes every open journal (graceful shutdown). */
  async close(): Promise<void> {
    for (const run of [...this.cache.values()]) this.evict(run, true);
    while (this.background.size > 0) await Promise.all([...this.background]);
    await this.commitLog.close();
    await this.index.close(this.failure === null && this.commitLog.holdsLease());
  }
}
