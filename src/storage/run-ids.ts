import { randomBytes } from 'node:crypto';
import { SlotArena } from './slot-arena.js';

/** The longest ID a slot holds (RUN_ID_PATTERN allows 128 characters). */
export const RUN_ID_MAX_BYTES = 255;
const EMPTY = 0;
const REMOVED = -1;
/** ID bytes freed before the arena is compacted. */
const ARENA_SLACK = 256 * 1024;

/** FNV-1a's prime, and murmur3's finalizer so the low bits a table position uses are mixed. */
const FNV_PRIME = 0x01000193;
function finish(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * The run IDs of a run table's slots, as bytes in one arena with an open-addressing table from
 * ID to slot, rather than a string and a map entry per run: at startup the index's 100,000 IDs
 * are read into it from the file's bytes without making a string, so nothing the read keeps
 * lives on the JavaScript heap (where 100,000 surviving strings made V8 double its young
 * generation, 16 MiB more for the bridge's life). A string is made only when an ID is asked for.
 *
 * The hash is seeded per process, as V8's own string hash is, so which IDs share a probe sequence
 * cannot be chosen from outside.
 */
export class RunIds {
  private readonly ids: SlotArena;
  /** Slot + 1 by ID hash (EMPTY, or REMOVED where an ID was deleted). */
  private table: Int32Array;
  /** Table cells not EMPTY, and IDs held. */
  private used = 0;
  private live = 0;
  private readonly seed = randomBytes(4).readUInt32LE(0);

  constructor(slots: number, idBytes: number) {
    this.ids = new SlotArena(slots, Math.max(16 * 1024, idBytes), ARENA_SLACK);
    this.table = new Int32Array(2 * slots);
  }

  /** IDs another thread read, as a structured clone delivers them (SlotArena.revive). */
  static revive(clone: RunIds): RunIds {
    Object.setPrototypeOf(clone, RunIds.prototype);
    SlotArena.revive(clone.ids);
    return clone;
  }

  buffers(): ArrayBufferLike[] {
    return [...this.ids.buffers(), this.table.buffer];
  }

  /** The slot holding `runId`, or -1. */
  find(runId: string): number {
    const n = runId.length;
    let h = this.seed;
    for (let i = 0; i < n; i++) h = Math.imul(h ^ runId.charCodeAt(i), FNV_PRIME);
    const mask = this.table.length - 1;
    const { bytes, at, length } = this.ids;
    for (let p = finish(h) & mask; ; p = (p + 1) & mask) {
      const v = this.table[p]!;
      if (v === EMPTY) return -1;
      if (v === REMOVED || length[v - 1] !== n) continue;
      let i = 0;
      for (const from = at[v - 1]!; i < n; i++) if (bytes[from + i] !== runId.charCodeAt(i)) break;
      if (i === n) return v - 1;
    }
  }

  /** The slot holding the ID `src[from, to)`, or -1. */
  findBytes(src: Uint8Array, from: number, to: number): number {
    const n = to - from;
    const mask = this.table.length - 1;
    const { bytes, at, length } = this.ids;
    for (let p = this.hash(src, from, to) & mask; ; p = (p + 1) & mask) {
      const v = this.table[p]!;
      if (v === EMPTY) return -1;
      if (v === REMOVED || length[v - 1] !== n) continue;
      let i = 0;
      for (const start = at[v - 1]!; i < n; i++) if (bytes[start + i] !== src[from + i]) break;
      if (i === n) return v - 1;
    }
  }

  /** The ID of `slot`, made as a string. */
  text(slot: number): string {
    return this.ids.toString(slot, 'latin1');
  }

  /** Gives the free `slot` the ID `runId`, which no slot holds. */
  add(slot: number, runId: string): void {
    this.checkFree(slot, runId.length);
    if (!this.ids.putLatin1(slot, runId)) throw new RangeError(`a run ID is ASCII: ${JSON.stringify(runId)}`);
    this.index(slot);
  }

  /** Gives the free `slot` the ID `src[from, to)`, which no slot holds. */
  addBytes(slot: number, src: Uint8Array, from: number, to: number): void {
    this.checkFree(slot, to - from);
    this.ids.put(slot, src, from, to);
    this.index(slot);
  }

  /**
   * Gives the free slots `first` on the IDs `src[from, ...)`, `lengths[i]` bytes each, copied at
   * once; false, the table then unusable, when an ID is empty or held already.
   */
  addRun(first: number, lengths: Uint8Array, src: Uint8Array, from: number): boolean {
    const n = lengths.length;
    // Before the IDs are in the arena: a rehash places every ID it holds.
    if (2 * (this.used + n) > this.table.length)
      this.rehash(Math.max(this.table.length, 4 * (this.live + n)));
    this.ids.putRun(first, lengths, src, from);
    for (let slot = first; slot < first + n; slot++) {
      if (this.ids.length[slot] === 0 || !this.insertNew(slot)) return false;
      this.live++;
    }
    return true;
  }

  /** Frees `slot`'s ID. */
  remove(slot: number): void {
    if (this.ids.length[slot] === 0) return;
    this.table[this.position(slot)] = REMOVED;
    this.ids.clear(slot);
    this.live--;
  }

  /** Room for `slots` slots. */
  grow(slots: number): void {
    this.ids.grow(slots);
  }

  private checkFree(slot: number, n: number): void {
    if (n === 0 || n > RUN_ID_MAX_BYTES)
      throw new RangeError(`a run ID is 1 to ${RUN_ID_MAX_BYTES} bytes, not ${n}`);
    if (this.ids.length[slot] !== 0) throw new RangeError(`slot ${slot} already holds a run ID`);
  }

  private hash(src: Uint8Array, from: number, to: number): number {
    let h = this.seed;
    for (let i = from; i < to; i++) h = Math.imul(h ^ src[i]!, FNV_PRIME);
    return finish(h);
  }

  private slotHash(slot: number): number {
    const at = this.ids.at[slot]!;
    return this.hash(this.ids.bytes, at, at + this.ids.length[slot]!);
  }

  private index(slot: number): void {
    this.live++;
    if (2 * (this.used + 1) > this.table.length) this.rehash(Math.max(this.table.length, 4 * this.live));
    else this.insert(slot);
  }

  /** The table position holding `slot`. */
  private position(slot: number): number {
    const mask = this.table.length - 1;
    for (let p = this.slotHash(slot) & mask; ; p = (p + 1) & mask) if (this.table[p] === slot + 1) return p;
  }

  private insert(slot: number): void {
    const mask = this.table.length - 1;
    let p = this.slotHash(slot) & mask;
    while (this.table[p] !== EMPTY) p = (p + 1) & mask;
    this.table[p] = slot + 1;
    this.used++;
  }

  /** Places `slot`'s ID in the table, one probe sequence; false if another slot holds it. */
  private insertNew(slot: number): boolean {
    const { bytes, at, length } = this.ids;
    const from = at[slot]!;
    const n = length[slot]!;
    const mask = this.table.length - 1;
    let p = this.slotHash(slot) & mask;
    for (let v = this.table[p]!; v !== EMPTY; p = (p + 1) & mask, v = this.table[p]!) {
      if (v === REMOVED || length[v - 1] !== n) continue;
      let i = 0;
      for (const other = at[v - 1]!; i < n; i++) if (bytes[other + i] !== bytes[from + i]) break;
      if (i === n) return false;
    }
    this.table[p] = slot + 1;
    this.used++;
    return true;
  }

  /** A table of at least `size` cells holding every ID, without REMOVED cells. */
  private rehash(size: number): void {
    this.table = new Int32Array(2 ** Math.ceil(Math.log2(size)));
    this.used = 0;
    const length = this.ids.length;
    for (let s = 0; s < length.length; s++) if (length[s] !== 0) this.insert(s);
  }
}
