import type { RunSummary } from '../contract/index.js';
import type { IndexFile } from './run-index-file.js';
import { packSummary, runSummary, unpackSummary } from './run-summary.js';
import { type IndexedRun, RunTable } from './run-table.js';
import type { OpenRun } from './types.js';

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

const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Creation order of two slots: by creation time, then by ID for runs indexed with the same time
 * (quarantined ones). Times as toISOString writes them compare as their milliseconds; any other
 * text as text, by code units (the order of ISO times of one format; not the locale's collation).
 */
function creationOrder(table: RunTable): (a: number, b: number) => number {
  return (a, b) => {
    const am = table.createdMs(a);
    const bm = table.createdMs(b);
    const byTime =
      Number.isNaN(am) || Number.isNaN(bm) ? byCodeUnits(table.createdAt(a), table.createdAt(b)) : am - bm;
    return byTime || byCodeUnits(table.runId(a), table.runId(b));
  };
}

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
  private table = new RunTable();
  /** Every run's slot in the table, in creation order. */
  private order: number[] = [];
  private file: IndexFile | null = null;
  /** Runs changed, and runs removed, since the file was last appended to. */
  private readonly changed = new Set<string>();
  private readonly removed = new Set<string>();
  private flush: NodeJS.Immediate | null = null;
  /** The newest run's creation time, in ms: no two runs share one (see `nextCreatedAt`). */
  private lastCreatedMs = 0;
  /** Creations between the ceiling check and their `add`. */
  private creating = 0;

  constructor(readonly maxRuns: number) {}

  /**
   * The startup index, from the index file and the run directories it lacks: the table is taken
   * over, not copied (it holds up to 100,000 runs).
   */
  load(table: RunTable): void {
    this.table = table;
    // The index file holds its entries in creation order, but for those appended since it was
    // last written whole: sorting nearly sorted entries costs little more than one pass.
    this.order = [...table.slotsInUse()].sort(creationOrder(table));
    const newest = this.order.at(-1);
    if (newest !== undefined) this.noteCreated(newest);
  }

  private noteCreated(slot: number): void {
    const ms = this.table.createdMs(slot);
    const at = Number.isNaN(ms) ? Date.parse(this.table.createdAt(slot)) : ms;
    this.lastCreatedMs = Math.max(this.lastCreatedMs, at || 0);
  }

  /**
   * Every entry in creation order, each made as it is read (the index file is rewritten from
   * these): a run removed meanwhile is left out, a run changed meanwhile is read as it is then.
   */
  all(): Iterable<IndexedRun> {
    // Slots and their generations, not IDs: 100,000 strings made at once would outlive a
    // scavenge and grow the young generation for good.
    const slots = Int32Array.from(this.order);
    const table = this.table;
    const generations = Uint32Array.from(slots, (slot) => table.generation(slot));
    return (function* () {
      for (let i = 0; i < slots.length; i++)
        if (table.generation(slots[i]!) === generations[i]) yield table.entry(slots[i]!);
    })();
  }

  /** Takes `slot` out of the creation order. */
  private unorder(slot: number): void {
    const at = this.order.lastIndexOf(slot);
    if (at >= 0) this.order.splice(at, 1);
  }

  /**
   * Keeps `order` sorted by creation time, as the index is rebuilt at startup. Creates that
   * overlap can finish out of order, so a run may land just before the newest ones.
   */
  add(e: IndexedRun): void {
    const old = this.table.slotOf(e.runId);
    if (old !== undefined) this.unorder(old);
    this.table.set(e.runId, e);
    const slot = this.table.slotOf(e.runId)!;
    const before = creationOrder(this.table);
    let at = this.order.length;
    while (at > 0 && before(slot, this.order[at - 1]!) < 0) at--;
    this.order.splice(at, 0, slot);
    this.noteCreated(slot);
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
    const slot = this.table.slotOf(runId);
    if (slot !== undefined) {
      this.unorder(slot);
      this.table.delete(runId);
    }
    this.changed.delete(runId);
    this.removed.add(runId);
    this.schedule();
  }

  /** From now on, changes go to `file` (written whole first when `rewrite`). */
  async persist(file: IndexFile, rewrite: boolean): Promise<void> {
    this.file = file;
    if (rewrite) await file.rewrite(this.all());
    this.schedule();
  }

  /** Queues runs' entries for the next append to the file. */
  note(runIds: Iterable<string>): void {
    for (const runId of runIds) {
      this.changed.add(runId);
      this.removed.delete(runId);
    }
    this.schedule();
  }

  /**
   * The run's entry takes the run as it stands: its journal's record count and head, and its
   * summary. Only for a run whose every record is durable (an entry ahead of its journal would
   * read as a rollback at the next start).
   */
  record(run: OpenRun): void {
    const slot = this.table.slotOf(run.runId);
    if (slot === undefined) return;
    const count = run.journal.count;
    this.table.setCount(slot, count);
    this.table.setHeadHex(slot, count === 0 ? null : run.journal.headMac);
    this.table.setSummary(slot, packSummary(runSummary(run.runId, run.state, run.config)));
    this.note([run.runId]);
  }

  /** The run's summary must be read from the run (its entry may predate records at startup). */
  forgetSummary(runId: string): void {
    const slot = this.table.slotOf(runId);
    if (slot !== undefined) this.table.setSummary(slot, null);
  }

  /** The run's list summary, null when none is known (it must be read from the run). */
  summaryOf(runId: string): RunSummary | null {
    const slot = this.table.slotOf(runId);
    const packed = slot === undefined ? null : this.table.summary(slot);
    return packed === null ? null : unpackSummary(runId, this.table.createdAt(slot!), packed);
  }

  /** The run's packed summary (run-summary.ts), null when none is known. */
  summary(runId: string): string | null {
    const slot = this.table.slotOf(runId);
    return slot === undefined ? null : this.table.summary(slot);
  }

  createdAt(runId: string): string | undefined {
    const slot = this.table.slotOf(runId);
    return slot === undefined ? undefined : this.table.createdAt(slot);
  }

  private schedule(): void {
    if (this.file === null || this.flush !== null || this.changed.size + this.removed.size === 0) return;
    this.flush = setImmediate(() => {
      this.flush = null;
      void this.append();
    });
  }

  private append(): Promise<void> {
    const entries: IndexedRun[] = [];
    for (const runId of this.changed) {
      const e = this.table.get(runId);
      if (e) entries.push(e);
    }
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
    return this.table.get(runId);
  }

  has(runId: string): boolean {
    return this.table.has(runId);
  }

  get size(): number {
    return this.order.length;
  }

  /** A page of run IDs in creation order (stable offsets). */
  page(offset: number, limit: number): string[] {
    return this.order.slice(offset, offset + limit).map((slot) => this.table.runId(slot));
  }
}
