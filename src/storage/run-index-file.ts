import { createHmac, timingSafeEqual } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { RUN_DIRECTORY_MAX } from '../contract/limits.js';
import { atomicWrite } from './atomic.js';
import { datasync, truncateTo, writeAll } from './fd-io.js';
import { openNoFollow, READ, READ_APPEND } from './no-follow.js';
import { runDirName } from './paths.js';
import { RunDirSet } from './run-dir-set.js';
import { RUN_ID_MAX_BYTES } from './run-ids.js';
import {
  isPacked,
  type PackedEntry,
  packableId,
  packableMillis,
  packEntries,
  packedSize,
  readPacked,
} from './run-index-packed.js';
import { type IndexedRun, RunTable } from './run-table.js';

export type { IndexedRun };

/**
 * `runs-index.log`: what `GET /runs` shows of every run, and each run's latest durable journal head,
 * so a bridge lists and starts without opening its runs (storage/store.ts).
 *
 * The file is a chain of blocks. A block is a header line `#<MAC> <bytes of its lines>`, then its
 * lines, each one run's entry (`<runId> TAB <run directory> TAB <createdAt> TAB <records> TAB
 * <head MAC or -> TAB <summary>`, the summary as run-summary.ts packs it) or a removal
 * (`<runId> TAB -`). The MAC is HMAC-SHA-256 under the integrity key over the domain, the
 * previous block's MAC and the lines, so blocks cannot be edited, dropped from the middle or
 * reordered without the chain failing. The first block opens with a line naming the review-trust
 * pin. A later entry for a run replaces an earlier one. A rewrite packs its entries as bytes
 * instead of text lines (run-index-packed.ts), which a start reads several times faster.
 *
 * Entries are appended as the group commit makes records durable, with no sync of their own; the
 * file is synced at each commit-log checkpoint, before the log is emptied (commit-log.ts), so an
 * entry lost in a crash belongs to a run the log names at the next start. The file is rewritten
 * whole (atomically) when the appended blocks outgrow the live entries.
 */
export const RUN_INDEX_FILE = 'runs-index.log';
const DOMAIN = 'harness.run-index.v1';
const HEADER = DOMAIN;
/** Lines per block when the file is rewritten whole: verification streams block by block. */
const BLOCK_BYTES = 1024 * 1024;
/** `#` + 64 hex + space + a length: a longer first line is no block header. */
const BLOCK_HEADER_MAX = 1 + 64 + 1 + 16;

export type IndexRead =
  | {
      kind: 'read';
      /** Every run's entry, as columns. */
      runs: RunTable;
      /**
       * The run directory of every entry, as written (so startup hashes no run ID); absent in a
       * read the startup reader made, whose own layout scan used it (startup-read.ts).
       */
      dirs?: RunDirSet;
      /** Entry lines read, superseded ones included, and blocks. */
      lines: number;
      blocks: number;
      bytes: number;
      validBytes: number;
      lastMac: string;
    }
  | { kind: 'absent' }
  | { kind: 'untrusted'; why: string };

const blockMac = (key: Buffer, prev: string, lines: Buffer): string =>
  createHmac('sha256', key).update(`${DOMAIN}\0${prev}\0`).update(lines).digest('hex');

function entryLine(e: IndexedRun): string {
  return `${e.runId}\t${runDirName(e.runId)}\t${e.createdAt}\t${e.count}\t${e.head ?? '-'}\t${e.summary ?? '-'}`;
}

/** The line saying a run's entry is void: the run was removed (a refused first event). */
const removalLine = (runId: string): string => `${runId}\t-`;

/** Bytes read at a time at startup: the file is streamed, never held whole. */
const READ_CHUNK = 4 * 1024 * 1024;
const NEWLINE = 10;
const DASH = 0x2d;

const TAB = 9;
/**
 * About the bytes of an entry, to size the columns for a file's entries: a packed one takes some
 * 170 (its summary 70), a text line 250.
 */
const ENTRY_BYTES = 160;
/** Fields of an entry line; a removal has two. */
const FIELDS = 6;

/** `run-` and 64 hex digits. */
const RUN_DIR_CHARS = 68;
/** Whether `lines[at]` starts with `run-` (compared byte by byte: a subarray per line costs 10%). */
const startsRunDir = (lines: Buffer, at: number): boolean =>
  lines[at] === 0x72 && lines[at + 1] === 0x75 && lines[at + 2] === 0x6e && lines[at + 3] === 0x2d;

const isDash = (lines: Buffer, from: number, to: number): boolean => to === from + 1 && lines[from] === DASH;

/** The non-negative decimal integer `lines[from, to)`, or -1. */
function decimal(lines: Buffer, from: number, to: number): number {
  if (to === from || to - from > 15) return -1;
  let v = 0;
  for (let i = from; i < to; i++) {
    const d = lines[i]! - 0x30;
    if (d < 0 || d > 9) return -1;
    v = v * 10 + d;
  }
  return v;
}

/**
 * The entry lines of one authenticated block, into `runs` and `dirs`, read from the bytes into
 * the table's columns: no string is made but for a removal's run ID. False for a malformed line.
 */
function readLines(lines: Buffer, runs: RunTable, dirs: RunDirSet): boolean {
  // Field i is `lines[start[i], start[i + 1] - 1)`: each start follows a tab, the line's end a newline.
  const start = new Int32Array(FIELDS + 1);
  for (let at = 0; at < lines.length; ) {
    // Found by the native search: a JavaScript loop over every byte takes twice as long.
    const end = lines.indexOf(NEWLINE, at);
    if (end < 0) return false;
    let n = 0;
    start[n++] = at;
    for (let t = lines.indexOf(TAB, at); t >= 0 && t < end; t = lines.indexOf(TAB, t + 1)) {
      if (n === FIELDS) return false;
      start[n++] = t + 1;
    }
    start[n] = end + 1;
    const idEnd = start[1]! - 1;
    if (n === 2 && isDash(lines, start[1]!, end)) {
      // A removal: `<runId> TAB -`.
      const runId = lines.toString('latin1', at, idEnd);
      if (runs.delete(runId)) dirs.delete(runDirName(runId));
    } else {
      if (n !== FIELDS) return false;
      const dir = start[1]!;
      const created = start[2]!;
      const records = start[3]!;
      const head = start[4]!;
      const summary = start[5]!;
      const count = decimal(lines, records, head - 1);
      if (count < 0) return false;
      let slot = runs.slotOfBytes(lines, at, idEnd);
      if (slot === undefined) {
        // A run's directory never changes: read for its first line only.
        if (idEnd - at < 1 || idEnd - at > RUN_ID_MAX_BYTES) return false;
        slot = runs.newSlotBytes(lines, at, idEnd);
        if (created - 1 - dir !== RUN_DIR_CHARS || !startsRunDir(lines, dir)) return false;
        if (!dirs.add(lines, dir + 4, slot)) return false;
      }
      runs.setCreated(slot, lines, created, records - 1);
      runs.setCount(slot, count);
      if (isDash(lines, head, summary - 1)) runs.setHead(slot, null, 0);
      else if (summary - 1 - head !== 64 || !runs.setHead(slot, lines, head)) return false;
      if (isDash(lines, summary, end)) runs.setSummaryBytes(slot, null, 0, 0);
      else runs.setSummaryBytes(slot, lines, summary, end);
    }
    at = end + 1;
  }
  return true;
}

/**
 * Reads and authenticates the whole chain, block by block, streaming the file (each block's
 * header gives its length, so no line is scanned twice). A last block cut short (its header or
 * fewer bytes than the header names) is a write a crash interrupted: it is left out and
 * `validBytes` says where the chain ends. Any other failure, a block whose MAC does not match
 * included, makes the whole index untrusted: the caller rebuilds it from the run directories.
 */
export async function readIndexFile(path: string, key: Buffer, trustPin: string): Promise<IndexRead> {
  let handle: FileHandle;
  try {
    handle = await openNoFollow(path, READ);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'absent' };
    return { kind: 'untrusted', why: (err as Error).message };
  }
  try {
    return await readBlocks(handle, key, trustPin);
  } catch (err) {
    return { kind: 'untrusted', why: (err as Error).message };
  } finally {
    await handle.close();
  }
}

async function readBlocks(handle: FileHandle, key: Buffer, trustPin: string): Promise<IndexRead> {
  // Sized from the file, so that reading it grows no column.
  const { size } = await handle.stat();
  const expected = Math.min(RUN_DIRECTORY_MAX, Math.ceil(size / ENTRY_BYTES));
  const runs = new RunTable(expected, Math.min(size, expected * ENTRY_BYTES) / 2);
  const dirs = new RunDirSet(expected, (slot) => runs.runId(slot));
  let buf = Buffer.allocUnsafe(READ_CHUNK);
  /** `buf[from, to)` holds the file's bytes from `fileAt` on. */
  let from = 0;
  let to = 0;
  let fileAt = 0;
  let eof = false;
  /** At least `need` unread bytes in `buf`, unless the file ends first. */
  const fill = async (need: number): Promise<void> => {
    while (to - from < need && !eof) {
      if (need > buf.length) {
        const grown = Buffer.allocUnsafe(Math.max(need, 2 * buf.length));
        buf.copy(grown, 0, from, to);
        buf = grown;
      } else if (from > 0) buf.copy(buf, 0, from, to);
      to -= from;
      from = 0;
      const { bytesRead } = await handle.read(buf, to, buf.length - to, fileAt + to);
      if (bytesRead === 0) eof = true;
      to += bytesRead;
    }
  };
  let count = 0;
  let blocks = 0;
  let prev = '';
  let first = true;
  for (;;) {
    await fill(BLOCK_HEADER_MAX + 1);
    if (to === from) break;
    const nl = buf.indexOf(NEWLINE, from);
    if (nl < 0 || nl >= to || nl - from > BLOCK_HEADER_MAX) break;
    const header = /^#([0-9a-f]{64}) (\d+)$/.exec(buf.toString('latin1', from, nl));
    if (!header) return { kind: 'untrusted', why: 'a block header is malformed' };
    const headerBytes = nl + 1 - from;
    const blockBytes = headerBytes + Number(header[2]);
    await fill(blockBytes);
    if (to - from < blockBytes) break;
    let lines = buf.subarray(from + headerBytes, from + blockBytes);
    const expected = Buffer.from(blockMac(key, prev, lines), 'hex');
    if (!timingSafeEqual(expected, Buffer.from(header[1]!, 'hex')))
      return { kind: 'untrusted', why: 'a block fails authentication' };
    // Packed entries are bytes, not lines; the pin's block never holds them.
    const packed = !first && isPacked(lines);
    if (!packed && lines.length > 0 && lines[lines.length - 1] !== NEWLINE)
      return { kind: 'untrusted', why: 'a block does not end a line' };
    if (first && lines.length > 0) {
      first = false;
      const nl = lines.indexOf(NEWLINE);
      if (lines.toString('utf8', 0, nl) !== `${HEADER} ${trustPin}`)
        return { kind: 'untrusted', why: 'it was written under another review-trust pin' };
      count++;
      lines = lines.subarray(nl + 1);
    }
    if (packed) {
      const entries = readPacked(lines, runs, dirs);
      if (entries < 0) return { kind: 'untrusted', why: 'a packed block is malformed' };
      count += entries;
    } else {
      for (let i = lines.indexOf(NEWLINE); i >= 0; i = lines.indexOf(NEWLINE, i + 1)) count++;
      if (!readLines(lines, runs, dirs)) return { kind: 'untrusted', why: 'an entry is malformed' };
    }
    prev = header[1]!;
    blocks++;
    from += blockBytes;
    fileAt += blockBytes;
  }
  if (first) return { kind: 'absent' };
  return { kind: 'read', runs, dirs, lines: count, blocks, bytes: size, validBytes: fileAt, lastMac: prev };
}

/** The appending side: blocks written behind the group commit, synced at checkpoints. */
export class IndexFile {
  private writing: Promise<void> = Promise.resolve();
  private failure: Error | null = null;

  private constructor(
    private readonly path: string,
    private readonly key: Buffer,
    private readonly trustPin: string,
    private handle: FileHandle,
    private prev: string,
    /** Bytes appended since the file was last written whole (all of them, for a file read). */
    private appended: number,
  ) {}

  /** Opens the file read for appending, cutting off a block a crash interrupted. */
  static async open(path: string, key: Buffer, trustPin: string, read: IndexRead): Promise<IndexFile> {
    // Not read (absent or untrusted): the caller rewrites it whole before appending anything.
    if (read.kind !== 'read')
      return new IndexFile(path, key, trustPin, await openNoFollow(path, READ_APPEND, 0o600), '', 0);
    const handle = await openNoFollow(path, READ_APPEND, 0o600);
    if (read.validBytes < read.bytes) await truncateTo(handle.fd, read.validBytes);
    // A file as a rewrite leaves it (one entry per run; the pin's block, packed blocks of
    // BLOCK_BYTES, and a block of the entries that stay text) counts as compact.
    const compact =
      read.lines === read.runs.size + 1 && read.blocks <= Math.ceil(read.validBytes / BLOCK_BYTES) + 2;
    return new IndexFile(path, key, trustPin, handle, read.lastMac, compact ? 0 : read.validBytes);
  }

  /** Bytes appended since the file was last written whole. */
  get appendedBytes(): number {
    return this.appended;
  }

  private block(lines: string[]): Buffer {
    return this.seal(Buffer.from(lines.length === 0 ? '' : `${lines.join('\n')}\n`));
  }

  /** The block of `body`: its header, chained to the block before, then the body. */
  private seal(body: Buffer): Buffer {
    this.prev = blockMac(this.key, this.prev, body);
    return Buffer.concat([Buffer.from(`#${this.prev} ${body.length}\n`), body]);
  }

  /**
   * Queues a block of entries, and of runs removed (no sync). A failed write fails the index until
   * the next rewrite.
   */
  append(entries: IndexedRun[], removed: string[] = []): Promise<void> {
    if (entries.length === 0 && removed.length === 0) return this.writing;
    this.writing = this.writing.then(async () => {
      if (this.failure) return;
      const data = this.block([...entries.map(entryLine), ...removed.map(removalLine)]);
      try {
        await writeAll(this.handle.fd, data);
        this.appended += data.length;
      } catch (err) {
        this.failure = err as Error;
      }
    });
    return this.writing;
  }

  /** Every block queued so far on disk. */
  async sync(): Promise<void> {
    await this.writing;
    if (this.failure) throw this.failure;
    await datasync(this.handle.fd);
  }

  /**
   * Replaces the file with one holding exactly `entries` (temp file, fsync, rename), read one at
   * a time as they are written, once the writes queued before are done.
   */
  rewrite(entries: Iterable<IndexedRun>): Promise<void> {
    const done = this.writing.then(async () => {
      this.prev = '';
      await atomicWrite(this.path, this.blocks(entries));
      const old = this.handle;
      this.handle = await openNoFollow(this.path, READ_APPEND, 0o600);
      await old.close().catch(() => {});
      this.appended = 0;
      this.failure = null;
    });
    this.writing = done.catch((err: Error) => {
      this.failure = err;
    });
    return done;
  }

  /**
   * The whole file, made one block at a time as it is written: the pin's line, packed blocks of
   * about BLOCK_BYTES, then the entries a packed block cannot hold as text lines.
   */
  private *blocks(entries: Iterable<IndexedRun>): Generator<Buffer> {
    yield this.block([`${HEADER} ${this.trustPin}`]);
    let packed: PackedEntry[] = [];
    let bytes = 0;
    const lines: string[] = [];
    for (const run of entries) {
      const createdMs = packableMillis(run);
      if (Number.isNaN(createdMs) || !packableId(run.runId)) {
        lines.push(entryLine(run));
        continue;
      }
      const e = { run, createdMs, dirHex: runDirName(run.runId).slice(4) };
      packed.push(e);
      bytes += packedSize(e);
      if (bytes >= BLOCK_BYTES) {
        yield this.seal(packEntries(packed));
        packed = [];
        bytes = 0;
      }
    }
    if (packed.length > 0) yield this.seal(packEntries(packed));
    if (lines.length > 0) yield this.block(lines);
  }

  async close(): Promise<void> {
    await this.writing.catch(() => {});
    await this.handle.close();
  }
}
