import { createHmac, timingSafeEqual } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { atomicWrite } from './atomic.js';
import { datasync, truncateTo, writeAll } from './fd-io.js';
import { openNoFollow, READ, READ_APPEND } from './no-follow.js';
import { runDirName } from './paths.js';

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
 * pin. A later entry for a run replaces an earlier one.
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

export interface IndexedRun {
  runId: string;
  createdAt: string;
  /** Durable journal records when the entry was written, and the MAC of the last (or null). */
  count: number;
  head: string | null;
  /** The run's list summary as JSON, or null when it must be read from the run. */
  summary: string | null;
}

export type IndexRead =
  | {
      kind: 'read';
      runs: Map<string, IndexedRun>;
      /** The run directory of every entry, as written (so startup hashes no run ID). */
      dirs: Map<string, string>;
      /** Entry lines read, superseded ones included. */
      lines: number;
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

function parseEntry(line: string): { entry: IndexedRun; dir: string } | null {
  const f = line.split('\t');
  if (f.length !== 6) return null;
  const count = Number(f[3]);
  if (!Number.isSafeInteger(count) || count < 0) return null;
  const entry = {
    runId: f[0]!,
    createdAt: f[2]!,
    count,
    head: f[4] === '-' ? null : f[4]!,
    summary: f[5] === '-' ? null : f[5]!,
  };
  return { entry, dir: f[1]! };
}

/**
 * Reads and authenticates the whole chain, block by block (each block's header gives its length,
 * so no line is scanned twice). A last block cut short (its header or fewer bytes than the header
 * names) is a write a crash interrupted: it is left out and `validBytes` says where the chain
 * ends. Any other failure, a block whose MAC does not match included, makes the whole index
 * untrusted: the caller rebuilds it from the run directories.
 */
export async function readIndexFile(path: string, key: Buffer, trustPin: string): Promise<IndexRead> {
  let data: Buffer;
  try {
    const handle = await openNoFollow(path, READ);
    try {
      data = await handle.readFile();
    } finally {
      await handle.close();
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'absent' };
    return { kind: 'untrusted', why: (err as Error).message };
  }
  if (data.length === 0) return { kind: 'absent' };
  const runs = new Map<string, IndexedRun>();
  const dirs = new Map<string, string>();
  let count = 0;
  let prev = '';
  let at = 0;
  let first = true;
  while (at < data.length) {
    const nl = data.indexOf(10, at);
    if (nl < 0 || nl - at > BLOCK_HEADER_MAX) break;
    const header = /^#([0-9a-f]{64}) (\d+)$/.exec(data.toString('latin1', at, nl));
    if (!header) return { kind: 'untrusted', why: 'a block header is malformed' };
    const end = nl + 1 + Number(header[2]);
    if (end > data.length) break;
    const lines = data.subarray(nl + 1, end);
    const expected = Buffer.from(blockMac(key, prev, lines), 'hex');
    if (!timingSafeEqual(expected, Buffer.from(header[1]!, 'hex')))
      return { kind: 'untrusted', why: 'a block fails authentication' };
    const text = lines.toString('utf8').split('\n');
    if (text.pop() !== '') return { kind: 'untrusted', why: 'a block does not end a line' };
    count += text.length;
    for (const line of text) {
      if (first) {
        first = false;
        if (line !== `${HEADER} ${trustPin}`)
          return { kind: 'untrusted', why: 'it was written under another review-trust pin' };
        continue;
      }
      const cut = line.indexOf('\t');
      if (line.length === cut + 2 && line.endsWith('\t-')) {
        const runId = line.slice(0, cut);
        if (runs.has(runId)) dirs.delete(runDirName(runId));
        runs.delete(runId);
        continue;
      }
      const e = parseEntry(line);
      if (e === null) return { kind: 'untrusted', why: 'an entry is malformed' };
      runs.set(e.entry.runId, e.entry);
      dirs.set(e.dir, e.entry.runId);
    }
    prev = header[1]!;
    at = end;
  }
  if (first) return { kind: 'absent' };
  return { kind: 'read', runs, dirs, lines: count, bytes: data.length, validBytes: at, lastMac: prev };
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
    return new IndexFile(path, key, trustPin, handle, read.lastMac, read.validBytes);
  }

  /** Bytes appended since the file was last written whole. */
  get appendedBytes(): number {
    return this.appended;
  }

  private block(lines: string[]): Buffer {
    const body = Buffer.from(lines.length === 0 ? '' : `${lines.join('\n')}\n`);
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

  /** Replaces the file with one holding exactly `entries` (temp file, fsync, rename). */
  rewrite(entries: Iterable<IndexedRun>): Promise<void> {
    const done = this.writing.then(async () => {
      this.prev = '';
      const chunks: Buffer[] = [];
      let lines = [`${HEADER} ${this.trustPin}`];
      let bytes = 0;
      for (const e of entries) {
        const line = entryLine(e);
        lines.push(line);
        bytes += line.length + 1;
        if (bytes >= BLOCK_BYTES) {
          chunks.push(this.block(lines));
          lines = [];
          bytes = 0;
        }
      }
      if (lines.length > 0) chunks.push(this.block(lines));
      const data = Buffer.concat(chunks);
      await atomicWrite(this.path, data);
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

  async close(): Promise<void> {
    await this.writing.catch(() => {});
    await this.handle.close();
  }
}
