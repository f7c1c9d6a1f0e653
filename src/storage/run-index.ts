import type { OpenRun } from './run-files.js';
import type { IndexedRun, IndexFile } from './run-index-file.js';
import { packSummary, runSummary } from './run-summary.js';

/** Appended index bytes tolerated before the file is rewritten whole. */
const REWRITE_SLACK = 8 * 1024 * 1024;

/** A run as the index holds it: its creation stamp, durable head and list summary. */
export type IndexEntry = IndexedRun;

/** An entry for a run known only by its files: nothing recorded of its journal, no summary yet. */
export const unreadEntry = (runId: string, createdAt: string): IndexEntry => ({
  runId,
  createdAt,
  count: 0,
  head: null,
  summary: null,
});

/** A run creation past the run ceiling; nothing was written. */
export class RunCeilingError extends Error {
  override readonly name = 'RunCeilingError';
  constructor(readonly maxRuns: number) {
    super(`the data directory holds its maximum of ${maxRuns} runs`);
  }
}

/** Creation order: by `createdAt`, then by ID for runs indexed with the same time (quarantined ones). */
const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
/** ISO times of one format sort as strings: by code units, not by the locale's collation (3.6x slower on 100,000 entries). */
const creationOrder = (a: IndexEntry, b: IndexEntry): number =>
  byCodeUnits(a.createdAt, b.createdAt) || byCodeUnits(a.runId, b.runId);

/**
 * Every run the data directory holds, in creation order (stable page offsets), with the creation
 * stamps and the run ceiling. Startup refuses a data directory holding more runs than the ceiling
 * (storage/layout.ts), so a creation past it is refused before anything is written; creations in
 * flight each hold a place, so concurrent ones cannot overshoot.
 *
 * Its durable form is the index file (run-index-file.ts): a changed entry is appended to it on the
 * next turn of the event loop, coalesced with every other change meanwhile, with no sync; `sync`
 * makes every change durable (commit-log checkpoints, shutdown).
 */
export class RunIndex {
  private entries = new Map<string, IndexEntry>();
  /** Every entry in creation order. */
  private order: IndexEntry[] = [];
  private file: IndexFile | null = null;
  /** Entries changed, and runs removed, since the file was last appended to. */
  private readonly changed = new Set<IndexEntry>();
  private readonly removed = new Set<string>();
  private flush: NodeJS.Immediate | null = null;
  /** The newest run's creation time, in ms: no two runs share one (see `nextCreatedAt`). */
  private lastCreatedMs = 0;
  /** Creations between the ceiling check and their `add`. */
  private creating = 0;

  constructor(readonly maxRuns: number) {}

  /**
   * The startup index, from the index file and the run directories it lacks, by run ID: the map is
   * taken over, not copied (it holds up to 100,000 runs).
   */
  load(entries: Map<string, IndexEntry>): void {
    this.entries = entries;
    // The index file holds its entries in creation order, but for those appended since it was
    // last written whole: sorting nearly sorted entries costs little more than one pass.
    this.order = [...entries.values()].sort(creationOrder);
    const newest = this.order.at(-1);
    if (newest) this.lastCreatedMs = Math.max(this.lastCreatedMs, Date.parse(newest.createdAt) || 0);
  }

  /** Every entry, in creation order (the index file is rewritten from these). */
  all(): IterableIterator<IndexEntry> {
    return this.order.values();
  }

  /**
   * Keeps `order` sorted by creation time, as the index is rebuilt at startup. Creates that
   * overlap can finish out of order, so a run may land just before the newest ones.
   */
  add(e: IndexEntry): void {
    this.entries.set(e.runId, e);
    let at = this.order.length;
    while (at > 0 && creationOrder(e, this.order[at - 1]!) < 0) at--;
    this.order.splice(at, 0, e);
    this.lastCreatedMs = Math.max(this.lastCreatedMs, Date.parse(e.createdAt) || 0);
  }

  /**
   * Runs `write` (which creates the run's files) holding a place under the ceiling, then indexes
   * the run. Every indexed run counts, quarantined ones too (each is a directory startup reads).
   */
  async create(e: IndexEntry, write: () => Promise<void>): Promise<void> {
    if (this.order.length + this.creating >= this.maxRuns) throw new RunCeilingError(this.maxRuns);
    this.creating++;
    try {
      await write();
      this.add(e);
    } finally {
      this.creating--;
    }
  }

  /** A run removed before its first append leaves the index file too. */
  remove(runId: string): void {
    const entry = this.entries.get(runId);
    if (entry) {
      this.changed.delete(entry);
      this.order.splice(this.order.lastIndexOf(entry), 1);
    }
    this.entries.delete(runId);
    this.removed.add(runId);
    this.schedule();
  }

  /** From now on, changes go to `file` (written whole first when `rewrite`). */
  async persist(file: IndexFile, rewrite: boolean): Promise<void> {
    this.file = file;
    if (rewrite) await file.rewrite(this.all());
    this.schedule();
  }

  /** Queues entries for the next append to the file. */
  note(entries: Iterable<IndexEntry>): void {
    for (const e of entries) {
      this.changed.add(e);
      this.removed.delete(e.runId);
    }
    this.schedule();
  }

  /**
   * The run's entry takes the run as it stands: its journal's record count and head, and its
   * summary. Only for a run whose every record is durable (an entry ahead of its journal would
   * read as a rollback at the next start).
   */
  record(run: OpenRun): void {
    const entry = this.entries.get(run.runId);
    if (!entry) return;
    const count = run.journal.count;
    entry.count = count;
    entry.head = count === 0 ? null : run.journal.headMac;
    entry.summary = packSummary(runSummary(run.runId, run.state, run.config));
    this.note([entry]);
  }

  private schedule(): void {
    if (this.file === null || this.flush !== null || this.changed.size + this.removed.size === 0) return;
    this.flush = setImmediate(() => {
      this.flush = null;
      void this.append();
    });
  }

  private append(): Promise<void> {
    const entries = [...this.changed];
    const removed = [...this.removed];
    this.changed.clear();
    this.removed.clear();
    return this.file!.append(entries, removed);
  }

  /**
   * Every change in the file, durably: appended and synced, or the file rewritten whole once the
   * appended blocks outgrow the live entries (about 512 bytes each).
   */
  async sync(): Promise<void> {
    if (this.file === null) return;
    if (this.flush !== null) {
      clearImmediate(this.flush);
      this.flush = null;
    }
    await this.append();
    const appended = this.file.appendedBytes;
    if (appended > REWRITE_SLACK && appended > this.size * 512) await this.file.rewrite(this.all());
    else await this.file.sync();
  }

  /**
   * Shutdown. With `compact` (every record durable, the lease still held), a file appended to
   * since it was last written whole is rewritten, so the next start reads one block per MiB of
   * live entries rather than one per group commit, and no superseded entry.
   */
  async close(compact = false): Promise<void> {
    if (this.file === null) return;
    try {
      if (compact && this.file.appendedBytes + this.changed.size + this.removed.size > 0) {
        if (this.flush !== null) clearImmediate(this.flush);
        this.flush = null;
        this.changed.clear();
        this.removed.clear();
        await this.file.rewrite(this.all());
      }
    } finally {
      await this.file.close();
    }
  }

  nextCreatedAt(): string {
    this.lastCreatedMs = Math.max(Date.now(), this.lastCreatedMs + 1);
    return new Date(this.lastCreatedMs).toISOString();
  }

  get(runId: string): IndexEntry | undefined {
    return this.entries.get(runId);
  }

  get size(): number {
    return this.order.length;
  }

  /** A page of run IDs in creation order (stable offsets). */
  page(offset: number, limit: number): string[] {
    return this.order.slice(offset, offset + limit).map((e) => e.runId);
  }
}
