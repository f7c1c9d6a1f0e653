import { DIGEST_BYTES, digestFromHex } from './hex.js';
import { RunIds } from './run-ids.js';
import { SlotArena } from './slot-arena.js';

/** A run as the index holds it (its line in runs-index.log, run-index-file.ts). */
export interface IndexedRun {
  runId: string;
  createdAt: string;
  /** Durable journal records when the entry was written, and the MAC of the last (or null). */
  count: number;
  head: string | null;
  /** The run's list summary as JSON, or null when it must be read from the run. */
  summary: string | null;
}

/** Slots a table makes room for at least; it doubles as it fills. */
const MIN_CAPACITY = 1024;
const HEAD_BYTES = DIGEST_BYTES;
/** Flags of a slot. */
const LIVE = 1;
const HAS_HEAD = 2;
/** Summary bytes superseded before the arena is compacted. */
const ARENA_SLACK = 1024 * 1024;

/** Digits and separators of `YYYY-MM-DDTHH:mm:ss.sssZ`: `d` a digit, anything else itself. */
const ISO_SHAPE = 'dddd-dd-ddTdd:dd:dd.dddZ';
const ZERO = 0x30;

/** The number written in `count` decimal digits at `bytes[at]`. */
function digits(bytes: Uint8Array, at: number, count: number): number {
  let v = 0;
  for (let i = at; i < at + count; i++) v = v * 10 + bytes[i]! - ZERO;
  return v;
}

const daysIn = (year: number, month: number): number =>
  month === 2
    ? year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
      ? 29
      : 28
    : 30 + ((month + (month >> 3)) & 1);

/**
 * The milliseconds of an ISO time as `Date#toISOString` writes it (years 1000 to 9999), read from
 * `bytes[from, to)`; NaN for any other text, which the table then keeps as text.
 */
export function isoMillis(bytes: Uint8Array, from: number, to: number): number {
  if (to - from !== ISO_SHAPE.length) return Number.NaN;
  for (let i = 0; i < ISO_SHAPE.length; i++) {
    const c = bytes[from + i]!;
    const digit = c >= ZERO && c <= ZERO + 9;
    if (ISO_SHAPE[i] === 'd' ? !digit : c !== ISO_SHAPE.charCodeAt(i)) return Number.NaN;
  }
  const year = digits(bytes, from, 4);
  const month = digits(bytes, from + 5, 2);
  const day = digits(bytes, from + 8, 2);
  const hours = digits(bytes, from + 11, 2);
  const minutes = digits(bytes, from + 14, 2);
  const seconds = digits(bytes, from + 17, 2);
  // Fields out of range (month 13, February 30th) would roll over: not what toISOString writes.
  if (year < 1000 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return Number.NaN;
  if (hours > 23 || minutes > 59 || seconds > 59) return Number.NaN;
  return Date.UTC(year, month - 1, day, hours, minutes, seconds, digits(bytes, from + 20, 3));
}

/**
 * The runs a packed block of the run index holds (run-index-packed.ts), as its columns: where each
 * starts in `body`, or the values read from it, all already checked.
 */
export interface PackedRuns {
  body: Buffer;
  idLengths: Uint8Array;
  /** The IDs, one after another. */
  ids: number;
  createdMs: Float64Array;
  recordCounts: Float64Array;
  /** Whether each run has a head MAC (1) or not (0). */
  hasHead: Uint8Array;
  /** 32 bytes each, zeros where there is none. */
  heads: number;
  summaryLengths: Uint32Array;
  /** The summaries, one after another. */
  summaries: number;
}

/** Bytes of a run ID, as a run table is first sized. */
const ID_BYTES = 24;

/**
 * Every run the index holds, by run ID, as columns rather than one object per run: the ID is
 * bytes in one arena (run-ids.ts); creation time, record count and head MAC are numbers and
 * bytes, and the packed summary (run-summary.ts) is UTF-8 bytes in another arena. A bridge with
 * 100,000 runs thus keeps no JavaScript object per run but its place in the creation order, and
 * about 200 bytes of typed arrays, room to grow included, where objects and strings took 350
 * bytes of heap and as much again in the collector's slack (docs/performance.md, "Many runs").
 *
 * Its interface is a map of `IndexedRun`s, made on demand, so startup's attribution reads it as
 * it would read a map.
 */
export class RunTable {
  private readonly ids: RunIds;
  private live = 0;
  /** Slots below `end` have been used; the free ones among them are in `free`. */
  private end = 0;
  private readonly free: number[] = [];
  private flags: Uint8Array;
  /** How many runs each slot has held: a slot freed and reused holds another run. */
  private generations: Uint32Array;
  private created: Float64Array;
  /** Creation times that are not as toISOString writes them (NaN in `created`). */
  private readonly createdText = new Map<number, string>();
  private counts: Float64Array;
  private heads: Buffer;
  /** Each run's packed summary as UTF-8; none when empty. */
  private readonly summaries: SlotArena;

  /**
   * Sized for `runs` runs and `summaryBytes` of summaries (startup estimates both from the index
   * file's size), so reading 100,000 entries does not copy the columns as they fill.
   */
  constructor(runs = 0, summaryBytes = 0) {
    const capacity = Math.max(MIN_CAPACITY, 2 ** Math.ceil(Math.log2(Math.max(1, runs))));
    this.ids = new RunIds(capacity, capacity * ID_BYTES);
    this.flags = new Uint8Array(capacity);
    this.generations = new Uint32Array(capacity);
    this.created = new Float64Array(capacity);
    this.counts = new Float64Array(capacity);
    this.heads = Buffer.alloc(capacity * HEAD_BYTES);
    this.summaries = new SlotArena(capacity, Math.max(64 * 1024, summaryBytes), ARENA_SLACK);
  }

  /**
   * A table another thread read (the startup reader, startup-read.ts), as a structured clone
   * delivers it: its fields, no class. Made a table again in place, its columns as they came.
   */
  static revive(clone: RunTable): RunTable {
    Object.setPrototypeOf(clone, RunTable.prototype);
    RunIds.revive(clone.ids);
    SlotArena.revive(clone.summaries);
    clone.heads = Buffer.from(clone.heads.buffer, clone.heads.byteOffset, clone.heads.byteLength);
    return clone;
  }

  /** The columns' memory, to transfer to another thread rather than copy. */
  buffers(): ArrayBufferLike[] {
    const columns = [this.flags, this.generations, this.created, this.counts, this.heads];
    return [...columns.map((c) => c.buffer), ...this.ids.buffers(), ...this.summaries.buffers()];
  }

  get size(): number {
    return this.live;
  }

  has(runId: string): boolean {
    return this.ids.find(runId) >= 0;
  }

  slotOf(runId: string): number | undefined {
    const slot = this.ids.find(runId);
    return slot < 0 ? undefined : slot;
  }

  /** The slot of the run whose ID is `bytes[from, to)`, or undefined. */
  slotOfBytes(bytes: Uint8Array, from: number, to: number): number | undefined {
    const slot = this.ids.findBytes(bytes, from, to);
    return slot < 0 ? undefined : slot;
  }

  runId(slot: number): string {
    return this.ids.text(slot);
  }

  /** The slot of `runId`, made (empty) if the table lacks it. */
  slotFor(runId: string): number {
    return this.slotOf(runId) ?? this.newSlot(runId);
  }

  /** A slot made (empty) for `runId`, which the table lacks. */
  newSlot(runId: string): number {
    const slot = this.takeSlot();
    this.ids.add(slot, runId);
    return this.fill(slot);
  }

  /** A slot made (empty) for the run whose ID is `bytes[from, to)`, which the table lacks. */
  newSlotBytes(bytes: Uint8Array, from: number, to: number): number {
    const slot = this.takeSlot();
    this.ids.addBytes(slot, bytes, from, to);
    return this.fill(slot);
  }

  private takeSlot(): number {
    const slot = this.free.at(-1) ?? this.end;
    if (slot >= this.flags.length) this.grow();
    return slot;
  }

  /** Marks the slot the ID was just given to in use, empty. */
  private fill(slot: number): number {
    if (slot === this.end) this.end++;
    else this.free.pop();
    this.live++;
    this.generations[slot]!++;
    this.flags[slot] = LIVE;
    this.counts[slot] = 0;
    this.setSummaryBytes(slot, null, 0, 0);
    return slot;
  }

  delete(runId: string): boolean {
    const slot = this.ids.find(runId);
    if (slot < 0) return false;
    this.setSummaryBytes(slot, null, 0, 0);
    this.createdText.delete(slot);
    this.flags[slot] = 0;
    this.ids.remove(slot);
    this.live--;
    this.free.push(slot);
    return true;
  }

  get(runId: string): IndexedRun | undefined {
    const slot = this.slotOf(runId);
    return slot === undefined ? undefined : this.entry(slot);
  }

  set(runId: string, e: IndexedRun): this {
    const slot = this.slotFor(runId);
    this.setCreatedText(slot, e.createdAt);
    this.counts[slot] = e.count;
    this.setHeadHex(slot, e.head);
    this.setSummary(slot, e.summary);
    return this;
  }

  /**
   * Adds the runs of a packed block in the slots after the last used, their columns copied at once
   * rather than run by run: the first slot, or -1 when a run ID is held already (the table is
   * then unusable).
   */
  addPacked(p: PackedRuns): number {
    const first = this.end;
    const n = p.idLengths.length;
    while (first + n > this.flags.length) this.grow();
    if (!this.ids.addRun(first, p.idLengths, p.body, p.ids)) return -1;
    this.created.set(p.createdMs, first);
    this.counts.set(p.recordCounts, first);
    for (let k = 0; k < n; k++) {
      this.flags[first + k] = p.hasHead[k] === 1 ? LIVE | HAS_HEAD : LIVE;
      this.generations[first + k]!++;
    }
    this.heads.set(p.body.subarray(p.heads, p.heads + n * HEAD_BYTES), first * HEAD_BYTES);
    this.summaries.putRun(first, p.summaryLengths, p.body, p.summaries);
    this.end += n;
    this.live += n;
    return first;
  }

  /** The slot of every run, in no particular order. */
  *slotsInUse(): Generator<number> {
    for (let slot = 0; slot < this.end; slot++) if ((this.flags[slot]! & LIVE) !== 0) yield slot;
  }

  *values(): Generator<IndexedRun> {
    for (const slot of this.slotsInUse()) yield this.entry(slot);
  }

  entry(slot: number): IndexedRun {
    return {
      runId: this.ids.text(slot),
      createdAt: this.createdAt(slot),
      count: this.counts[slot]!,
      head: this.head(slot),
      summary: this.summary(slot),
    };
  }

  /** Changes when the slot is freed and given to another run. */
  generation(slot: number): number {
    return this.flags[slot] === 0 ? -1 : this.generations[slot]!;
  }

  createdAt(slot: number): string {
    const ms = this.created[slot]!;
    return Number.isNaN(ms) ? this.createdText.get(slot)! : new Date(ms).toISOString();
  }

  /** Creation time in ms, NaN when it is not as toISOString writes it (compare `createdAt`). */
  createdMs(slot: number): number {
    return this.created[slot]!;
  }

  count(slot: number): number {
    return this.counts[slot]!;
  }

  head(slot: number): string | null {
    if ((this.flags[slot]! & HAS_HEAD) === 0) return null;
    return this.heads.toString('hex', slot * HEAD_BYTES, (slot + 1) * HEAD_BYTES);
  }

  summary(slot: number): string | null {
    return this.summaries.length[slot] === 0 ? null : this.summaries.toString(slot, 'utf8');
  }

  setCount(slot: number, count: number): void {
    this.counts[slot] = count;
  }

  setCreated(slot: number, bytes: Uint8Array, from: number, to: number): void {
    const ms = isoMillis(bytes, from, to);
    this.created[slot] = ms;
    if (Number.isNaN(ms))
      this.createdText.set(slot, Buffer.from(bytes.subarray(from, to)).toString('latin1'));
    else this.createdText.delete(slot);
  }

  /** The creation time as milliseconds, which toISOString writes (the index's column blocks). */
  setCreatedMs(slot: number, ms: number): void {
    this.created[slot] = ms;
    this.createdText.delete(slot);
  }

  setCreatedText(slot: number, createdAt: string): void {
    const bytes = Buffer.from(createdAt, 'latin1');
    this.setCreated(slot, bytes, 0, bytes.length);
    // Text outside latin1 does not survive the round trip through bytes: kept as given.
    if (Number.isNaN(this.created[slot]!)) this.createdText.set(slot, createdAt);
  }

  /** Sets the head MAC from 64 lowercase hex digits at `bytes[from]`, or none; false if malformed. */
  setHead(slot: number, bytes: Uint8Array | null, from: number): boolean {
    if (bytes === null) this.flags[slot]! &= ~HAS_HEAD;
    else if (digestFromHex(bytes, from, this.heads, slot * HEAD_BYTES)) this.flags[slot]! |= HAS_HEAD;
    else return false;
    return true;
  }

  /** Sets the head MAC from its 32 bytes at `bytes[from]`. */
  setHeadDigest(slot: number, bytes: Uint8Array, from: number): void {
    this.heads.set(bytes.subarray(from, from + HEAD_BYTES), slot * HEAD_BYTES);
    this.flags[slot]! |= HAS_HEAD;
  }

  setHeadHex(slot: number, head: string | null): void {
    if (head === null) this.setHead(slot, null, 0);
    else if (head.length !== 2 * HEAD_BYTES || !this.setHead(slot, Buffer.from(head, 'latin1'), 0))
      throw new RangeError(`a head MAC is 64 lowercase hex digits, not ${JSON.stringify(head)}`);
  }

  setSummary(slot: number, summary: string | null): void {
    if (summary === null) this.setSummaryBytes(slot, null, 0, 0);
    else {
      const bytes = Buffer.from(summary);
      this.setSummaryBytes(slot, bytes, 0, bytes.length);
    }
  }

  /** The summary as the UTF-8 bytes `bytes[from, to)`, or none. */
  setSummaryBytes(slot: number, bytes: Uint8Array | null, from: number, to: number): void {
    if (bytes === null) this.summaries.clear(slot);
    else this.summaries.put(slot, bytes, from, to);
  }

  private grow(): void {
    const capacity = 2 * this.flags.length;
    const grown = <T extends Uint8Array | Float64Array | Uint32Array>(a: T, make: (n: number) => T): T => {
      const b = make(capacity * (a.length / this.flags.length));
      b.set(a as never);
      return b;
    };
    this.created = grown(this.created, (n) => new Float64Array(n));
    this.counts = grown(this.counts, (n) => new Float64Array(n));
    this.generations = grown(this.generations, (n) => new Uint32Array(n));
    this.heads = grown(this.heads, (n) => Buffer.alloc(n));
    this.flags = grown(this.flags, (n) => new Uint8Array(n));
    this.ids.grow(capacity);
    this.summaries.grow(capacity);
  }
}
