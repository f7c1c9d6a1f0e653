import { randomBytes } from 'node:crypto';

/** Run ID characters are ASCII (RUN_ID_PATTERN); one byte each. */
const MAX_CODE = 0xff;
/** The longest ID a slot holds (RUN_ID_PATTERN allows 128 characters). */
export const RUN_ID_MAX_BYTES = 255;
const EMPTY = 0;
const REMOVED = -1;
/** ID bytes superseded before the arena is compacted. */
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
  private arena: Buffer;
  private arenaEnd = 0;
  private arenaLive = 0;
  /** Slot `s`'s ID is `arena[at[s], at[s] + length[s])`; length 0 for a free slot. */
  private at: Uint32Array;
  private length: Uint8Array;
  /** Slot + 1 by ID hash (EMPTY, or REMOVED where an ID was deleted). */
  private table: Int32Array;
  /** Table cells not EMPTY. */
  private used = 0;
  private readonly seed = randomBytes(4).readUInt32LE(0);

  constructor(slots: number, idBytes: number) {
    this.at = new Uint32Array(slots);
    this.length = new Uint8Array(slots);
    this.table = new Int32Array(2 * slots);
    this.arena = Buffer.alloc(Math.max(16 * 1024, idBytes));
  }

  /** The slot holding `runId`, or -1. */
  find(runId: string): number {
    const n = runId.length;
    let h = this.seed;
    for (let i = 0; i < n; i++) h = Math.imul(h ^ runId.charCodeAt(i), FNV_PRIME);
    const mask = this.table.length - 1;
    for (let p = finish(h) & mask; ; p = (p + 1) & mask) {
      const v = this.table[p]!;
      if (v === EMPTY) return -1;
      if (v !== REMOVED && this.length[v - 1] === n && this.holdsText(v - 1, runId)) return v - 1;
    }
  }

  /** The slot holding the ID `bytes[from, to)`, or -1. */
  findBytes(bytes: Uint8Array, from: number, to: number): number {
    const mask = this.table.length - 1;
    for (let p = this.hashBytes(bytes, from, to) & mask; ; p = (p + 1) & mask) {
      const v = this.table[p]!;
      if (v === EMPTY) return -1;
      if (v !== REMOVED && this.length[v - 1] === to - from && this.holdsBytes(v - 1, bytes, from))
        return v - 1;
    }
  }

  /** The ID of `slot`, made as a string. */
  text(slot: number): string {
    const at = this.at[slot]!;
    return this.arena.toString('latin1', at, at + this.length[slot]!);
  }

  /** Gives the free `slot` the ID `runId`, which no slot holds. */
  add(slot: number, runId: string): void {
    const n = runId.length;
    if (n === 0 || n > RUN_ID_MAX_BYTES) throw new RangeError(`a run ID is 1 to 255 characters, not ${n}`);
    const at = this.reserve(slot, n);
    for (let i = 0; i < n; i++) {
      const c = runId.charCodeAt(i);
      if (c > MAX_CODE) throw new RangeError(`a run ID is ASCII: ${JSON.stringify(runId)}`);
      this.arena[at + i] = c;
    }
    this.commit(slot, at, n);
  }

  /** Gives the free `slot` the ID `bytes[from, to)`, which no slot holds. */
  addBytes(slot: number, bytes: Uint8Array, from: number, to: number): void {
    const n = to - from;
    if (n === 0 || n > RUN_ID_MAX_BYTES) throw new RangeError(`a run ID is 1 to 255 bytes, not ${n}`);
    const at = this.reserve(slot, n);
    // Byte by byte: an ID is some 10 to 40 bytes, and a native copy per run costs more.
    for (let i = 0; i < n; i++) this.arena[at + i] = bytes[from + i]!;
    this.commit(slot, at, n);
  }

  /** Frees `slot`'s ID. */
  remove(slot: number): void {
    const n = this.length[slot]!;
    if (n === 0) return;
    this.table[this.position(slot)] = REMOVED;
    this.length[slot] = 0;
    this.arenaLive -= n;
  }

  /** Room for `slots` slots. */
  grow(slots: number): void {
    const at = new Uint32Array(slots);
    at.set(this.at);
    this.at = at;
    const length = new Uint8Array(slots);
    length.set(this.length);
    this.length = length;
  }

  private hashBytes(bytes: Uint8Array, from: number, to: number): number {
    let h = this.seed;
    for (let i = from; i < to; i++) h = Math.imul(h ^ bytes[i]!, FNV_PRIME);
    return finish(h);
  }

  private holdsText(slot: number, runId: string): boolean {
    const at = this.at[slot]!;
    for (let i = 0; i < runId.length; i++) if (this.arena[at + i] !== runId.charCodeAt(i)) return false;
    return true;
  }

  private holdsBytes(slot: number, bytes: Uint8Array, from: number): boolean {
    const at = this.at[slot]!;
    const n = this.length[slot]!;
    for (let i = 0; i < n; i++) if (this.arena[at + i] !== bytes[from + i]) return false;
    return true;
  }

  /** Where `n` bytes of `slot`'s new ID go in the arena. */
  private reserve(slot: number, n: number): number {
    if (this.length[slot] !== 0) throw new RangeError(`slot ${slot} already holds a run ID`);
    if (this.arenaEnd + n > this.arena.length) this.makeRoom(n);
    return this.arenaEnd;
  }

  private commit(slot: number, at: number, n: number): void {
    this.at[slot] = at;
    this.length[slot] = n;
    this.arenaEnd += n;
    this.arenaLive += n;
    if (2 * (this.used + 1) > this.table.length) this.rehash(Math.max(this.table.length, 4 * this.live()));
    this.insert(slot);
  }

  private live(): number {
    let n = 0;
    for (let s = 0; s < this.length.length; s++) if (this.length[s] !== 0) n++;
    return n;
  }

  /** The table position holding `slot`. */
  private position(slot: number): number {
    const mask = this.table.length - 1;
    const at = this.at[slot]!;
    for (let p = this.hashBytes(this.arena, at, at + this.length[slot]!) & mask; ; p = (p + 1) & mask)
      if (this.table[p] === slot + 1) return p;
  }

  private insert(slot: number): void {
    const mask = this.table.length - 1;
    const at = this.at[slot]!;
    let p = this.hashBytes(this.arena, at, at + this.length[slot]!) & mask;
    while (this.table[p] !== EMPTY) p = (p + 1) & mask;
    this.table[p] = slot + 1;
    this.used++;
  }

  /** A table of `size` cells (a power of two) holding every live ID, without REMOVED cells. */
  private rehash(size: number): void {
    this.table = new Int32Array(2 ** Math.ceil(Math.log2(size)));
    this.used = 0;
    for (let s = 0; s < this.length.length; s++) if (this.length[s] !== 0) this.insert(s);
  }

  /**
   * Room for `n` more arena bytes: removed IDs dropped once they pass ARENA_SLACK and outweigh
   * the live ones, else a larger arena.
   */
  private makeRoom(n: number): void {
    const garbage = this.arenaEnd - this.arenaLive;
    if (!(garbage > ARENA_SLACK && garbage > this.arenaLive)) {
      const arena = Buffer.alloc(Math.max(2 * this.arena.length, this.arenaEnd + n));
      this.arena.copy(arena, 0, 0, this.arenaEnd);
      this.arena = arena;
      return;
    }
    const arena = Buffer.alloc(Math.max(this.arena.length, 2 * (this.arenaLive + n)));
    let end = 0;
    for (let s = 0; s < this.length.length; s++) {
      const len = this.length[s]!;
      if (len === 0) continue;
      this.arena.copy(arena, end, this.at[s]!, this.at[s]! + len);
      this.at[s] = end;
      end += len;
    }
    this.arena = arena;
    this.arenaEnd = end;
  }
}
