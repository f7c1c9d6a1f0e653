import type { RunDirSet } from './run-dir-set.js';
import { type IndexedRun, isoMillis, type RunTable } from './run-table.js';

/**
 * Packed blocks of the run index (run-index-file.ts): a rewrite's entries as columns of bytes,
 * not text lines, so that a start copies each column into the run table at once instead of
 * parsing 100,000 lines field by field (docs/performance.md, "Many runs"). A packed block's body
 * is `=packed` LF, then the entry count n (u32), then n of each, column after column:
 *
 *   run ID lengths (u8), the run IDs; creation times in ms (f64); record counts (f64); head flags
 *   (u8: 1 when a head MAC is held); head MACs (32 bytes, zeros for none); the run directories'
 *   SHA-256s (32 bytes); summary lengths (u32, 0 for none), the summaries (UTF-8).
 *
 * Numbers are little-endian. The block is authenticated as any other (its MAC covers these
 * bytes) and read as strictly as a text block: a field out of range, a run ID with a character
 * no run ID has (a text line would split it) or one a block before it holds, or bytes left over
 * make it malformed. A rewrite writes its packed blocks first; an entry whose creation time is
 * not as `toISOString` writes it, or whose run ID has another character, stays a text line.
 */
const MARK = Buffer.from('=packed\n', 'latin1');
/** The characters of a run ID (RUN_ID_PATTERN's; `run-<hex>` for a run known by its directory). */
const ID_CHAR = new Uint8Array(256);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-')
  ID_CHAR[c.charCodeAt(0)] = 1;
const DIGEST = 32;
/** Creation times `isoMillis` reads: years 1000 to 9999. */
const FIRST_MS = Date.UTC(1000, 0, 1);
const LAST_MS = Date.UTC(10000, 0, 1) - 1;

/** Where each column after the IDs starts, the first (creation times) at `created`. */
function columns(created: number, n: number) {
  const counts = created + 8 * n;
  const hasHead = counts + 8 * n;
  const heads = hasHead + n;
  const dirs = heads + DIGEST * n;
  const summaryLengths = dirs + DIGEST * n;
  return { created, counts, hasHead, heads, dirs, summaryLengths, summaries: summaryLengths + 4 * n };
}

/** An entry as a packed block holds it. */
export interface PackedEntry {
  run: IndexedRun;
  createdMs: number;
  /** SHA-256 of the run directory's name (`run-<hex>`), as 64 hex digits. */
  dirHex: string;
}

/** The entry's creation time in ms when it can be packed (as toISOString writes it), else NaN. */
export function packableMillis(run: IndexedRun): number {
  const bytes = Buffer.from(run.createdAt, 'latin1');
  return isoMillis(bytes, 0, bytes.length);
}

/** Whether a packed block can hold the run ID (else its entry stays a text line). */
export function packableId(runId: string): boolean {
  for (let i = 0; i < runId.length; i++) {
    const c = runId.charCodeAt(i);
    if (c > 0xff || ID_CHAR[c] === 0) return false;
  }
  return runId.length > 0 && runId.length <= 0xff;
}

export const isPacked = (body: Buffer): boolean =>
  body.length >= MARK.length && body.compare(MARK, 0, MARK.length, 0, MARK.length) === 0;

/** The bytes an entry takes in a packed block, about (a summary counted as Latin-1). */
export const packedSize = (e: PackedEntry): number =>
  1 + e.run.runId.length + 8 + 8 + 1 + 2 * DIGEST + 4 + (e.run.summary?.length ?? 0);

/** The body of a packed block holding `entries`. */
export function packEntries(entries: readonly PackedEntry[]): Buffer {
  const n = entries.length;
  const ids = entries.map((e) => Buffer.from(e.run.runId, 'latin1'));
  const summaries = entries.map((e) => Buffer.from(e.run.summary ?? ''));
  const head = Buffer.alloc(4 + n * (1 + 8 + 8 + 1 + 2 * DIGEST + 4));
  head.writeUInt32LE(n);
  // Laid out here without the IDs, which go between the ID lengths and the creation times.
  const idLengths = 4;
  const { created, counts, hasHead, heads, dirs, summaryLengths, summaries: end } = columns(idLengths + n, n);
  entries.forEach(({ run, createdMs, dirHex }, k) => {
    head[idLengths + k] = ids[k]!.length;
    head.writeDoubleLE(createdMs, created + 8 * k);
    head.writeDoubleLE(run.count, counts + 8 * k);
    if (run.head !== null) {
      head[hasHead + k] = 1;
      head.write(run.head, heads + DIGEST * k, DIGEST, 'hex');
    }
    head.write(dirHex, dirs + DIGEST * k, DIGEST, 'hex');
    head.writeUInt32LE(summaries[k]!.length, summaryLengths + 4 * k);
  });
  // The ID lengths, then the IDs, then every other column but the summaries.
  return Buffer.concat([MARK, head.subarray(0, created), ...ids, head.subarray(created, end), ...summaries]);
}

/**
 * The entries of one authenticated packed block, into `runs` and `dirs`, which hold none of them:
 * the number read, or -1 when the block is malformed (the table is then unusable).
 */
export function readPacked(body: Buffer, runs: RunTable, dirs: RunDirSet): number {
  let at = MARK.length;
  if (at + 4 > body.length) return -1;
  const n = body.readUInt32LE(at);
  at += 4;
  // Every column's place, checked against the body's length before any is read.
  if (at + n > body.length) return -1;
  const idLengths = body.subarray(at, at + n);
  const ids = at + n;
  let idBytes = 0;
  for (let k = 0; k < n; k++) {
    if (idLengths[k] === 0) return -1;
    idBytes += idLengths[k]!;
  }
  if (ids + idBytes > body.length) return -1;
  for (let at = ids; at < ids + idBytes; at++) if (ID_CHAR[body[at]!] === 0) return -1;
  const {
    created,
    counts,
    hasHead,
    heads,
    dirs: dirHashes,
    summaryLengths: lengths,
    summaries,
  } = columns(ids + idBytes, n);
  if (summaries > body.length) return -1;
  const createdMs = new Float64Array(n);
  const recordCounts = new Float64Array(n);
  const summaryLengths = new Uint32Array(n);
  let summaryBytes = 0;
  for (let k = 0; k < n; k++) {
    const ms = body.readDoubleLE(created + 8 * k);
    const count = body.readDoubleLE(counts + 8 * k);
    if (!Number.isInteger(ms) || ms < FIRST_MS || ms > LAST_MS) return -1;
    if (!Number.isSafeInteger(count) || count < 0 || body[hasHead + k]! > 1) return -1;
    createdMs[k] = ms;
    recordCounts[k] = count;
    summaryLengths[k] = body.readUInt32LE(lengths + 4 * k);
    summaryBytes += summaryLengths[k]!;
  }
  if (summaries + summaryBytes !== body.length) return -1;
  const first = runs.addPacked({
    body,
    idLengths,
    ids,
    createdMs,
    recordCounts,
    hasHead: body.subarray(hasHead, hasHead + n),
    heads,
    summaryLengths,
    summaries,
  });
  if (first < 0) return -1;
  dirs.addDigests(body, dirHashes, n, first);
  return n;
}
