import { hash, randomBytes } from 'node:crypto';

/**
 * A 32-bit fingerprint of an event id under a secret drawn once per process. Keyed, so that ids
 * cannot be chosen to share a fingerprint: every shared fingerprint costs a journal read on each
 * later lookup, and chosen collisions would make a run's appends quadratic.
 */
const SECRET = randomBytes(16).toString('hex');
// From the hex digest: a Buffer digest costs more than the hash itself (docs/performance.md).
export const keyedFingerprint = (id: string): number =>
  Number.parseInt(hash('sha256', SECRET + id, 'hex').slice(0, 8), 16);

const EMPTY = -1;
const NONE: readonly number[] = Object.freeze([]);

/**
 * A run's event ids -> journal positions, for idempotent repeats, kept off the V8 heap: an open
 * addressing table of fingerprints and positions in typed arrays (at most 16 bytes per event).
 * A string-keyed Map held every id as a live string, and V8 sizes its heap as a multiple of what
 * is live. The index answers with candidates only: the caller confirms each against the id in
 * the journal record at that position.
 */
export class IdIndex {
  private fps = new Uint32Array(64);
  private seqs = new Int32Array(64).fill(EMPTY);
  private count = 0;
  /** The last id fingerprinted: an append follows the lookup of the same id. */
  private lastId: string | null = null;
  private lastFp = 0;

  constructor(private readonly fingerprint: (id: string) => number = keyedFingerprint) {}

  get size(): number {
    return this.count;
  }

  add(id: string, seq: number): void {
    if ((this.count + 1) * 2 > this.seqs.length) this.grow();
    this.place(this.fingerprintOf(id), seq);
    this.count++;
  }

  /** Positions whose event id may be `id` (same fingerprint), in journal order. */
  candidates(id: string): readonly number[] {
    const fp = this.fingerprintOf(id);
    const mask = this.seqs.length - 1;
    let out: number[] | null = null;
    for (let i = fp & mask; this.seqs[i] !== EMPTY; i = (i + 1) & mask) {
      if (this.fps[i] !== fp) continue;
      out ??= [];
      out.push(this.seqs[i]!);
    }
    return out === null ? NONE : out.sort((a, b) => a - b);
  }

  private fingerprintOf(id: string): number {
    if (id !== this.lastId) {
      this.lastFp = this.fingerprint(id) >>> 0;
      this.lastId = id;
    }
    return this.lastFp;
  }

  private place(fp: number, seq: number): void {
    const mask = this.seqs.length - 1;
    let i = fp & mask;
    while (this.seqs[i] !== EMPTY) i = (i + 1) & mask;
    this.fps[i] = fp;
    this.seqs[i] = seq;
  }

  private grow(): void {
    const { fps, seqs } = this;
    this.fps = new Uint32Array(seqs.length * 2);
    this.seqs = new Int32Array(seqs.length * 2).fill(EMPTY);
    for (let i = 0; i < seqs.length; i++) if (seqs[i] !== EMPTY) this.place(fps[i]!, seqs[i]!);
  }
}
