/** How much a full arena grows, and how much room a compacted one keeps, over what it holds. */
const GROWTH = 1.5;

/**
 * Bytes per table slot, all in one buffer: slot `s` holds `bytes[at[s], at[s] + length[s])`,
 * length 0 for none. The run table keeps its run IDs and its summaries so, rather than as a
 * string per run (storage/run-table.ts); the summary arena is its largest column.
 *
 * Bytes that fit where the slot's old ones were are written over them. Bytes a slot outgrows or
 * frees stay until the buffer is full; it is then compacted if they pass `slack` and a quarter of
 * the live ones, else grown by half. A buffer thus holds at most about twice its live bytes
 * (1.5 x 1.25) plus 1.5 `slack`, where doubling and compacting only past the live bytes held up
 * to four times as many: 16 MiB for 6.7 MiB of summaries at 100,000 runs (docs/performance.md,
 * "Many runs").
 */
export class SlotArena {
  bytes: Buffer;
  at: Uint32Array;
  length: Uint32Array;
  private end = 0;
  private live = 0;

  constructor(
    slots: number,
    bytes: number,
    private readonly slack: number,
  ) {
    this.at = new Uint32Array(slots);
    this.length = new Uint32Array(slots);
    this.bytes = Buffer.alloc(bytes);
  }

  /**
   * An arena another thread made, as a structured clone delivers it (its fields, no class, the
   * buffer as a plain Uint8Array): made an arena again in place.
   */
  static revive(clone: SlotArena): SlotArena {
    Object.setPrototypeOf(clone, SlotArena.prototype);
    clone.bytes = Buffer.from(clone.bytes.buffer, clone.bytes.byteOffset, clone.bytes.byteLength);
    return clone;
  }

  /** The memory the arena holds, to transfer to another thread rather than copy. */
  buffers(): ArrayBufferLike[] {
    return [this.bytes.buffer, this.at.buffer, this.length.buffer];
  }

  /** Slot `slot` holds `src[from, to)` (replacing what it held). */
  put(slot: number, src: Uint8Array, from: number, to: number): void {
    const at = this.reserve(slot, to - from);
    // A summary (some 70 bytes) natively; a run ID, shorter than a view is worth making, byte by
    // byte. A start copies 100,000 of each before the loop is optimized.
    if (to - from >= 32) this.bytes.set(src.subarray(from, to), at);
    else for (let i = from; i < to; i++) this.bytes[at + i - from] = src[i]!;
  }

  /**
   * Slots `first` to `first + lengths.length - 1`, all empty, take consecutive pieces of
   * `src[from, ...)`, `lengths[i]` bytes each (0: none), copied at once.
   */
  putRun(first: number, lengths: ArrayLike<number>, src: Uint8Array, from: number): void {
    let total = 0;
    for (let i = 0; i < lengths.length; i++) total += lengths[i]!;
    if (this.end + total > this.bytes.length) this.makeRoom(total);
    this.bytes.set(src.subarray(from, from + total), this.end);
    for (let i = 0; i < lengths.length; i++) {
      this.at[first + i] = this.end;
      this.length[first + i] = lengths[i]!;
      this.end += lengths[i]!;
    }
    this.live += total;
  }

  /**
   * Slot `slot` holds the characters of `text`, one byte each (replacing what it held); false,
   * and the slot empty, when a character is above U+00FF.
   */
  putLatin1(slot: number, text: string): boolean {
    const at = this.reserve(slot, text.length);
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c > 0xff) {
        this.clear(slot);
        return false;
      }
      this.bytes[at + i] = c;
    }
    return true;
  }

  clear(slot: number): void {
    this.live -= this.length[slot]!;
    this.length[slot] = 0;
  }

  toString(slot: number, encoding: 'latin1' | 'utf8'): string {
    const at = this.at[slot]!;
    return this.bytes.toString(encoding, at, at + this.length[slot]!);
  }

  /** Room for `slots` slots. */
  grow(slots: number): void {
    const at = new Uint32Array(slots);
    at.set(this.at);
    this.at = at;
    const length = new Uint32Array(slots);
    length.set(this.length);
    this.length = length;
  }

  /** Makes the slot hold `n` bytes (where it held its old ones if they fit), returning where. */
  private reserve(slot: number, n: number): number {
    const old = this.length[slot]!;
    if (n > 0 && n <= old) {
      this.live += n - old;
      this.length[slot] = n;
      return this.at[slot]!;
    }
    this.clear(slot);
    if (n === 0) return 0;
    if (this.end + n > this.bytes.length) this.makeRoom(n);
    const at = this.end;
    this.at[slot] = at;
    this.length[slot] = n;
    this.end += n;
    this.live += n;
    return at;
  }

  /** Room for `n` more bytes: the buffer compacted if enough of it is garbage, else a larger one. */
  private makeRoom(n: number): void {
    const garbage = this.end - this.live;
    if (!(garbage > this.slack && 4 * garbage > this.live)) {
      const bytes = Buffer.alloc(Math.max(Math.ceil(GROWTH * this.bytes.length), this.end + n));
      this.bytes.copy(bytes, 0, 0, this.end);
      this.bytes = bytes;
      return;
    }
    const bytes = Buffer.alloc(Math.ceil(GROWTH * (this.live + n)));
    let end = 0;
    for (let s = 0; s < this.length.length; s++) {
      const len = this.length[s]!;
      if (len === 0) continue;
      this.bytes.copy(bytes, end, this.at[s]!, this.at[s]! + len);
      this.at[s] = end;
      end += len;
    }
    this.bytes = bytes;
    this.end = end;
  }
}
