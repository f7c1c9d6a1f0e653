/**
 * The run directories the run index names (`run-<SHA-256 of the run ID>`), kept as 32 bytes each
 * in one open-addressing table rather than a map of 68-character strings: startup looks up every
 * name in the data directory's listing here, and a bridge may hold 100,000 runs. A lookup marks
 * the directory as found, so the runs whose directory is gone are those left unmarked.
 */
import { digestFromHex, digestFromHexText, DIGEST_BYTES as HASH_BYTES } from './hex.js';

const PREFIX = 'run-';
const EMPTY = 0;
const REMOVED = -1;

export class RunDirSet {
  /** Entry `i`'s directory hash at `hashes[32 i]`, its run's slot at `slots[i]` (-1 once removed). */
  private hashes: Buffer;
  private slots: Int32Array;
  private entries = 0;
  private found: Uint8Array;
  /** Entry index + 1 by hash (EMPTY, or REMOVED for a deleted entry). */
  private table: Int32Array;
  private live = 0;
  private used = 0;
  private readonly scratch = Buffer.alloc(HASH_BYTES);

  /**
   * Sized for `dirs` directories (startup estimates them from the index file's size); `runIdOf`
   * names the run in a slot (the run table's).
   */
  constructor(
    dirs = 0,
    private readonly runIdOf: (slot: number) => string = String,
  ) {
    const capacity = Math.max(1024, 2 ** Math.ceil(Math.log2(Math.max(1, dirs))));
    this.hashes = Buffer.alloc(capacity * HASH_BYTES);
    this.slots = new Int32Array(capacity);
    this.found = new Uint8Array(capacity);
    this.table = new Int32Array(2 * capacity);
  }

  get size(): number {
    return this.live;
  }

  /**
   * Adds the directory whose hash is the 64 lowercase hex digits at `bytes[from]`, holding the run
   * in `slot`; false when they are not such digits.
   */
  add(bytes: Uint8Array, from: number, slot: number): boolean {
    if (!digestFromHex(bytes, from, this.scratch, 0)) return false;
    this.addDigest(this.scratch, 0, slot);
    return true;
  }

  /** Adds the directory whose hash is the 32 bytes at `bytes[from]`, holding the run in `slot`. */
  addDigest(bytes: Uint8Array, from: number, slot: number): void {
    const i = this.entries;
    if (i === this.slots.length) this.growEntries();
    for (let k = 0; k < HASH_BYTES; k++) this.hashes[i * HASH_BYTES + k] = bytes[from + k]!;
    if (this.find(this.hashes, i * HASH_BYTES) >= 0) return;
    this.entries++;
    this.slots[i] = slot;
    // A rehash places every entry, this one included.
    if (2 * (this.used + 1) > this.table.length) this.rehash(2 * this.table.length);
    else this.insert(i);
    this.live++;
  }

  /**
   * Adds `n` directories whose hashes are consecutive in `bytes` from `from`, holding the runs in
   * slots `first` on, copied at once. Each is the hash of a run ID the run table did not hold
   * (RunIds.addRun refuses one it holds), so none is looked for first.
   */
  addDigests(bytes: Uint8Array, from: number, n: number, first: number): void {
    while (this.entries + n > this.slots.length) this.growEntries();
    this.hashes.set(bytes.subarray(from, from + n * HASH_BYTES), this.entries * HASH_BYTES);
    if (2 * (this.used + n) > this.table.length) this.rehash(2 ** Math.ceil(Math.log2(4 * (this.live + n))));
    for (let k = 0; k < n; k++) {
      this.slots[this.entries] = first + k;
      this.insert(this.entries++);
    }
    this.live += n;
  }

  /** Whether the index names directory `name`, which is then marked found. */
  mark(name: string): boolean {
    const i = this.lookup(name);
    if (i < 0) return false;
    this.found[i] = 1;
    return true;
  }

  /** Whether the index names the directory whose hash is `hash[from, from + 32)`, then marked found. */
  markDigest(hash: Buffer, from: number): boolean {
    const i = this.find(hash, from);
    if (i < 0) return false;
    this.found[i] = 1;
    return true;
  }

  has(name: string): boolean {
    return this.lookup(name) >= 0;
  }

  delete(name: string): boolean {
    const i = this.lookup(name);
    if (i < 0) return false;
    this.table[this.position(i)] = REMOVED;
    this.slots[i] = -1;
    this.live--;
    return true;
  }

  /** The runs whose directory no `mark` found. */
  unmarked(): string[] {
    const ids: string[] = [];
    for (let i = 0; i < this.entries; i++)
      if (this.slots[i] !== -1 && this.found[i] === 0) ids.push(this.runIdOf(this.slots[i]!));
    return ids;
  }

  private lookup(name: string): number {
    if (name.length !== PREFIX.length + 2 * HASH_BYTES || !name.startsWith(PREFIX)) return -1;
    return digestFromHexText(name, PREFIX.length, this.scratch, 0) ? this.find(this.scratch) : -1;
  }

  /** A SHA-256 is uniform: its first four bytes are the hash. */
  private start(hash: Buffer, at = 0): number {
    return hash.readUInt32LE(at) & (this.table.length - 1);
  }

  /** The entry whose hash is `hash[from, from + 32)`, or -1. */
  private find(hash: Buffer, from = 0): number {
    const mask = this.table.length - 1;
    for (let p = this.start(hash, from); ; p = (p + 1) & mask) {
      const v = this.table[p]!;
      if (v === EMPTY) return -1;
      if (v !== REMOVED && this.holds(v - 1, hash, from)) return v - 1;
    }
  }

  /** Whether entry `i` has `hash` (compared in JavaScript: a native compare per probe costs more). */
  private holds(i: number, hash: Buffer, from: number): boolean {
    const at = i * HASH_BYTES;
    for (let k = 0; k < HASH_BYTES; k++) if (this.hashes[at + k] !== hash[from + k]) return false;
    return true;
  }

  /** The table position holding entry `i`. */
  private position(i: number): number {
    const mask = this.table.length - 1;
    for (let p = this.start(this.hashes, i * HASH_BYTES); ; p = (p + 1) & mask)
      if (this.table[p] === i + 1) return p;
  }

  private insert(i: number): void {
    const mask = this.table.length - 1;
    let p = this.start(this.hashes, i * HASH_BYTES);
    while (this.table[p] !== EMPTY) p = (p + 1) & mask;
    this.table[p] = i + 1;
    this.used++;
  }

  private rehash(size: number): void {
    this.table = new Int32Array(size);
    this.used = 0;
    for (let i = 0; i < this.entries; i++) if (this.slots[i] !== -1) this.insert(i);
  }

  private growEntries(): void {
    const hashes = Buffer.alloc(2 * this.hashes.length);
    this.hashes.copy(hashes);
    this.hashes = hashes;
    const found = new Uint8Array(2 * this.found.length);
    found.set(this.found);
    this.found = found;
    const slots = new Int32Array(2 * this.slots.length);
    slots.set(this.slots);
    this.slots = slots;
  }
}
