import type pg from 'pg';
import type {
  ArtifactClaim,
  JournalEntry,
  RecordSeal,
  RunConfig,
  RunSummary,
  StoredEvent,
} from '../../contract/index.js';
import {
  applyEntry,
  emptyState,
  JOURNAL_MAX_BYTES,
  OPEN_RUN_CACHE,
  RUN_DIRECTORY_MAX,
  SNAPSHOT_MAX_BYTES,
} from '../../contract/index.js';
import { IdIndex } from '../id-index.js';
import { JournalAuthError } from '../journal-record.js';
import { trimOpenRuns } from '../open-runs.js';
import { type QuarantineKind, Quarantines } from '../quarantine.js';
import { configMac, configText, RunIntegrityError } from '../run-files.js';
import { RunIndex, unreadEntry } from '../run-index.js';
import type { LoadResult, OpenRun, QuarantineInfo, RunStorage } from '../types.js';
import { CommitQueue, headSeal, JournalIntegrity, PgJournal, StoreUnavailable } from './journal.js';
import { RunLeases } from './leases.js';
import { readPgRecordsAfter, readPgRun } from './run-read.js';

export type PgRun = OpenRun<PgJournal>;

export interface PgStoreOptions {
  pool: pg.Pool;
  integrityKey: Buffer;
  trustPin: string;
  cacheSize?: number;
  /** Each journal's byte ceiling (default JOURNAL_MAX_BYTES; tests make it small). */
  journalMaxBytes?: number;
  /** Reported as health's snapshot ceiling (this store writes no snapshot; tests set it). */
  snapshotMaxBytes?: number;
  /** The most runs the store holds (default RUN_DIRECTORY_MAX, as the file store). */
  maxRuns?: number;
  log?: (msg: string) => void;
  /** Told the record count of each batch committed (the bridge's metrics). */
  onBatch?: (records: number) => void;
  /** Told once per run that becomes quarantined, with why in a word (the bridge's metrics). */
  onQuarantine?: (runId: string, kind: QuarantineKind) => void;
  /** Told each time a run leaves the open-run cache to make room (`harness bridge`'s heap-growth governor). */
  onEvict?: () => void;
}

/**
 * The PostgreSQL run store (docs/scale-out.md): the same contract as the file store (RunStore),
 * with the database in place of the data directory. Every record is the file journal's line, MAC'd
 * and chained under the integrity key the database never sees, and every run's row holds its
 * sealed config and sealed head, so a row changed, deleted or reordered through SQL fails
 * authentication when the run is opened or read, and quarantines it, as a flipped byte does in a
 * file. The database can withhold runs or roll a run back whole to an earlier head it once held;
 * it cannot forge or reorder a record.
 *
 * In memory, as the file store: the index of runs in creation order (RunIndex, without its file),
 * a bounded cache of open, verified runs, and the quarantine list.
 */
export class PgRunStore implements RunStorage<PgRun> {
  private readonly index: RunIndex;
  private readonly cache = new Map<string, PgRun>();
  private readonly quarantined: Quarantines;
  private readonly queue: CommitQueue;
  private readonly leases: RunLeases;
  private readonly cacheSize: number;
  private readonly log: (msg: string) => void;

  private constructor(private readonly opts: PgStoreOptions) {
    this.index = new RunIndex(opts.maxRuns ?? RUN_DIRECTORY_MAX);
    this.queue = new CommitQueue(opts.pool, opts.integrityKey, opts.onBatch);
    this.leases = new RunLeases(opts.pool);
    this.cacheSize = opts.cacheSize ?? OPEN_RUN_CACHE;
    this.log = opts.log ?? (() => {});
    this.quarantined = new Quarantines(this.log, opts.onQuarantine);
  }

  /** Indexes every run the database holds, and the quarantines it recorded (drift). */
  static async open(opts: PgStoreOptions): Promise<PgRunStore> {
    const store = new PgRunStore(opts);
    const runs = await opts.pool.query<{ run_id: string; created_at: string }>(
      'SELECT run_id, created_at FROM harness_runs ORDER BY ordinal',
    );
    for (const row of runs.rows) store.index.add(unreadEntry(row.run_id, row.created_at));
    const kept = await opts.pool.query<{ run_id: string; reason: string; kind: string }>(
      'SELECT run_id, reason, kind FROM harness_quarantines ORDER BY since, reason',
    );
    for (const row of kept.rows)
      if (store.index.has(row.run_id)) store.quarantine(row.run_id, row.reason, row.kind as QuarantineKind);
    return store;
  }

  get ceilings(): { journalMaxBytes: number; snapshotMaxBytes: number; maxRuns: number } {
    return {
      journalMaxBytes: this.opts.journalMaxBytes ?? JOURNAL_MAX_BYTES,
      // No snapshot is written (a run is replayed from its rows when opened); the figure is the
      // file store's, so health reads the same on both.
      snapshotMaxBytes: this.opts.snapshotMaxBytes ?? SNAPSHOT_MAX_BYTES,
      maxRuns: this.index.maxRuns,
    };
  }

  get size(): number {
    return this.index.size;
  }

  /** A failed commit fails only the runs it touched (they reload); the store itself goes on. */
  get failure(): Error | null {
    return null;
  }

  has(runId: string): boolean {
    return this.index.has(runId);
  }

  /**
   * Runs other bridges created or discarded since this one looked: one count, and the list of IDs
   * only when the count differs from the index's.
   */
  async refresh(): Promise<void> {
    const counted = await this.query<{ n: string }>('SELECT count(*)::text AS n FROM harness_runs', []);
    if (Number(counted.rows[0]?.n) === this.index.size) return;
    const all = await this.query<{ run_id: string; created_at: string }>(
      'SELECT run_id, created_at FROM harness_runs ORDER BY ordinal',
      [],
    );
    const present = new Set<string>();
    for (const row of all.rows) {
      present.add(row.run_id);
      if (!this.index.has(row.run_id)) this.index.add(unreadEntry(row.run_id, row.created_at));
    }
    for (const runId of this.index.page(0, this.index.size))
      if (!present.has(runId) && !this.cache.has(runId)) this.index.remove(runId);
  }

  page(offset: number, limit: number): string[] {
    return this.index.page(offset, limit);
  }

  indexedSummary(runId: string): RunSummary | null {
    return this.quarantined.has(runId) ? null : this.index.summaryOf(runId);
  }

  nextCreatedAt(): string {
    return this.index.nextCreatedAt();
  }

  quarantine(runId: string, reason: string, kind: QuarantineKind = 'integrity'): QuarantineInfo {
    const info = this.quarantined.add(runId, reason, kind);
    const cached = this.cache.get(runId);
    if (cached && cached.pins === 0) this.cache.delete(runId);
    return info;
  }

  async quarantineForDrift(runId: string, reasons: string[]): Promise<void> {
    for (const reason of reasons) this.quarantine(runId, reason, 'drift');
    const kept = this.quarantined.of(runId);
    if (reasons.length === 0 || kept === undefined) return;
    try {
      await this.opts.pool.query({
        text: `INSERT INTO harness_quarantines (run_id, reason, kind, since)
          SELECT $1, reason, 'drift', $3 FROM unnest($2::text[]) AS reason ON CONFLICT DO NOTHING`,
        values: [runId, kept.reasons, kept.since],
      });
    } catch (err) {
      // Quarantined all the same while this bridge runs; only the record for the next start is lost.
      this.log(`run ${runId}: its drift quarantine could not be recorded: ${(err as Error).message}`);
    }
  }

  quarantineOf(runId: string): QuarantineInfo | undefined {
    return this.quarantined.of(runId);
  }

  /**
   * Opens (or finds cached) a run and pins it. A write first takes the run's lease (leases.ts), so
   * bridges sharing the database decide its events one at a time; a cached run is first brought up
   * to what the database holds whenever another bridge may have written it since.
   */
  async load(runId: string, intent: 'read' | 'write' = 'read'): Promise<LoadResult<PgRun>> {
    let createdAt = this.index.createdAt(runId);
    if (createdAt === undefined) {
      // Another bridge sharing the database may have created it since this one started.
      const found = await this.query<{ created_at: string }>(
        'SELECT created_at FROM harness_runs WHERE run_id = $1',
        [runId],
      );
      const row = found.rows[0];
      if (row === undefined) return { kind: 'missing' };
      createdAt = row.created_at;
      this.index.add(unreadEntry(runId, createdAt));
    }
    const q = this.quarantined.of(runId);
    if (q) return { kind: 'quarantined', runId, createdAt, quarantine: q };
    // Held since before this request: no other bridge can have written the run meanwhile.
    const current =
      intent === 'write' ? (await this.leases.take(runId)) === 'held' : this.leases.holds(runId);
    let run = this.cache.get(runId);
    if (run?.journal.broken || (run && !current && !(await this.caughtUp(run)))) {
      this.cache.delete(runId);
      run = undefined;
    }
    if (run) {
      this.cache.delete(runId);
      this.cache.set(runId, run);
      run.pins++;
      return { kind: 'open', run };
    }
    let opened: PgRun | null;
    try {
      opened = await this.openRun(runId);
    } catch (err) {
      if (!(err instanceof RunIntegrityError)) throw err;
      const quarantine = this.quarantine(runId, err.message);
      return { kind: 'quarantined', runId, createdAt, quarantine };
    }
    // Its row is gone: discarded by the bridge that created it (a refused first event).
    if (opened === null) {
      this.index.remove(runId);
      return { kind: 'missing' };
    }
    run = opened;
    this.index.record(run);
    run.pins++;
    this.cache.set(runId, run);
    this.trimCache();
    return { kind: 'open', run };
  }

  /**
   * Brings a cached run up to its row's head: the records another bridge appended since are read,
   * authenticated as chained to this bridge's head and applied. False when the run must be opened
   * afresh instead (its head moved in any other way, or a record fails: the reopen then
   * quarantines it with the reason).
   */
  private async caughtUp(run: PgRun): Promise<boolean> {
    await run.journal.idle();
    if (run.journal.broken) return false;
    const after = await readPgRecordsAfter(
      (text, values) => this.query(text, values),
      this.opts.integrityKey,
      run.runId,
      run.journal.count,
      run.journal.headMac,
    );
    if (after === null) return false;
    for (const entry of after.entries) {
      applyEntry(run.state, entry);
      run.ids.add(entry.event.id, entry.seq);
    }
    if (after.entries.length > 0) {
      run.journal.advance(after.count, after.head, after.bytes);
      this.index.record(run);
    }
    return true;
  }

  /** Reads and authenticates a run (run-read.ts) into its state, under the bridge's pin. */
  private async openRun(runId: string): Promise<PgRun | null> {
    const { integrityKey: key, trustPin } = this.opts;
    let state = emptyState(runId, '');
    const ids = new IdIndex();
    let size = 0;
    const read = await readPgRun(
      (text, values) => this.query(text, values),
      key,
      runId,
      (entry, line) => {
        applyEntry(state, entry);
        ids.add(entry.event.id, entry.seq);
        size += Buffer.byteLength(line) + 1;
      },
      (config) => {
        if (config.trustPin !== trustPin)
          throw new RunIntegrityError(
            'the review-trust pin sealed in its run config differs from the bridge pin',
          );
        state = emptyState(runId, config.createdAt);
      },
    );
    if (read === null) return null;
    const { config, count, head } = read;
    const journal = new PgJournal(
      this.queue,
      this.opts.pool,
      key,
      runId,
      count,
      head,
      size,
      this.opts.journalMaxBytes,
    );
    return { runId, config, state, journal, ids, pins: 0 };
  }

  release(run: PgRun): void {
    if (--run.pins === 0) this.leases.idle(run.runId);
    this.trimCache();
  }

  /** Creates the run's row (sealed config, sealed empty head), within the run ceiling. */
  async create(config: RunConfig): Promise<PgRun> {
    const key = this.opts.integrityKey;
    const genesis = configMac(key, config);
    let inserted = false;
    await this.index.create(unreadEntry(config.runId, config.createdAt), async () => {
      const res = await this.query(
        `INSERT INTO harness_runs (run_id, created_at, config, head_count, head_mac, head_seal)
         VALUES ($1, $2, $3, 0, $4, $5) ON CONFLICT (run_id) DO NOTHING`,
        [
          config.runId,
          config.createdAt,
          configText(key, config),
          genesis,
          headSeal(key, config.runId, 0, genesis),
        ],
      );
      inserted = res.rowCount === 1;
      if (!inserted)
        throw new StoreUnavailable('another bridge created this run at the same moment; retry to use it');
    });
    await this.leases.take(config.runId);
    const journal = new PgJournal(
      this.queue,
      this.opts.pool,
      key,
      config.runId,
      0,
      genesis,
      0,
      this.opts.journalMaxBytes,
    );
    const run: PgRun = {
      runId: config.runId,
      config,
      state: emptyState(config.runId, config.createdAt),
      journal,
      ids: new IdIndex(),
      pins: 1,
    };
    this.cache.set(config.runId, run);
    this.trimCache();
    this.index.record(run);
    return run;
  }

  async discardUnused(run: PgRun): Promise<void> {
    if (run.journal.count > 0 || this.cache.get(run.runId) !== run) return;
    this.cache.delete(run.runId);
    this.index.remove(run.runId);
    await this.query('DELETE FROM harness_runs WHERE run_id = $1 AND head_count = 0', [run.runId]);
  }

  async sealConfig(run: PgRun, config: RunConfig): Promise<void> {
    if (run.journal.count > 0) throw new Error('the run config is immutable after the first append');
    const key = this.opts.integrityKey;
    const genesis = configMac(key, config);
    const res = await this.query(
      `UPDATE harness_runs SET config = $2, head_mac = $3, head_seal = $4
       WHERE run_id = $1 AND head_count = 0`,
      [run.runId, configText(key, config), genesis, headSeal(key, run.runId, 0, genesis)],
    );
    if (res.rowCount !== 1) throw new StoreUnavailable('the run changed in the database; retry');
    run.config = config;
    run.journal.rebase(genesis);
    this.index.record(run);
  }

  append(run: PgRun, event: StoredEvent, claim: ArtifactClaim | null, seal: RecordSeal | null = null) {
    const result = run.journal.append(event, claim, seal);
    applyEntry(run.state, result.entry);
    run.ids.add(event.id, result.entry.seq);
    const count = run.journal.count;
    result.durable.then(
      () => {
        if (run.journal.count === count) this.index.record(run);
      },
      () => {},
    );
    return result;
  }

  async read(run: PgRun, from: number, to: number): Promise<JournalEntry[]> {
    try {
      return await run.journal.read(from, to);
    } catch (err) {
      if (!(err instanceof JournalAuthError || err instanceof JournalIntegrity)) throw err;
      const reason = `records: ${err.message}`;
      this.quarantine(run.runId, reason, 'journal_read');
      throw new RunIntegrityError(reason);
    }
  }

  private trimCache(): void {
    trimOpenRuns(this.cache, this.cacheSize, (run) => {
      this.cache.delete(run.runId);
      this.opts.onEvict?.();
    });
  }

  /** Waits for every queued record (their answers) and forgets the open runs; the pool is the caller's. */
  async close(): Promise<void> {
    await this.queue.idle();
    this.cache.clear();
    await this.leases.close();
  }

  /** A query whose failure (the database away) is StoreUnavailable: 503 bridge_busy, retried. */
  private async query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values: unknown[],
  ): Promise<pg.QueryResult<R>> {
    try {
      return await this.opts.pool.query<R>(text, values);
    } catch (err) {
      throw new StoreUnavailable(`the run store is unavailable: ${(err as Error).message}`, { cause: err });
    }
  }
}
