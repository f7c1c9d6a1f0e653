import { createHash } from 'node:crypto';
import { closeSync, readSync } from 'node:fs';
import { openArtifactSync } from '../validators/artifact-open-sync.js';
import { ArtifactError, hashTimedOut, tooLarge } from '../validators/artifact-root.js';
import { type VerifyResult, type VerifyTask, verifyEd25519 } from '../validators/signature.js';
import { type DocumentScan, scanDocument } from './document-refs.js';
import { SETTLED_CTIME_MS, type StatWalkPart, statWalk } from './stat-inventory.js';

/**
 * Code that runs inside a worker thread. Results are plain objects: errors crossing the thread
 * boundary lose their fields (structured clone), so failures come back as `{ ok: false, ... }`.
 */
export type HashResult =
  | { ok: true; sha256: string; bytes: number; leaked: boolean }
  | { ok: false; code: string; message: string };

/**
 * What a claim task reports per path: the claim, or why the file cannot be claimed. `identity` is
 * the file's (digest-cache.ts) when its digest may be kept for it; `cached` marks a digest taken
 * from the cache, the file not read. `deferred`: not hashed, being larger than the task may hash
 * (`deferAbove`); HashPool.claimMany hashes it in a task of its own and never returns it.
 */
export type ClaimResult =
  | {
      ok: true;
      path: string;
      sha256: string;
      size: number;
      mtimeMs: number;
      leaked: boolean;
      identity?: string;
      cached?: boolean;
      /** When these bytes were last read from the file (set by HashPool.claimEach). */
      hashedAt?: number;
    }
  | { ok: false; path: string; missing: boolean; message: string; deferred?: boolean };

/** How a claim treats a file beyond opening and hashing it (all optional). */
export interface ClaimFileOptions {
  /** A digest already scanned clean for these needles. */
  clean?: string | null;
  /** The identity and digest the file had when last hashed (digest-cache.ts). */
  known?: { identity: string; sha256: string } | null;
  /** Files larger than this are refused by their size, unread (HARNESS_ARTIFACT_MAX_BYTES). */
  maxBytes?: number | undefined;
  /** Hashing the file may take this long; then it is abandoned (HARNESS_REHASH_TIMEOUT_MS). */
  timeoutMs?: number | undefined;
  /** Files larger than this are not hashed but reported `deferred` (the small files' share). */
  deferAbove?: number | undefined;
  /** Directories this batch already found real (openArtifactSync's `checkedDirs`). */
  checkedDirs?: Set<string> | undefined;
}

export { SETTLED_CTIME_MS } from './stat-inventory.js';

const CHUNK = 1024 * 1024;
// One read buffer per thread: hashDescriptor is synchronous, so it is never used twice at once.
let scratch = Buffer.allocUnsafe(CHUNK);

/**
 * Hashes an already-opened descriptor from offset 0. Descriptors are process-wide, so the main
 * thread opens (with its no-link checks) and the worker only reads what was opened.
 */
export function hashDescriptor(
  fd: number,
  needles: readonly string[] = [],
  deadline = Number.POSITIVE_INFINITY,
): HashResult {
  const hash = createHash('sha256');
  const patterns = needles.filter((n) => n !== '').map((n) => Buffer.from(n));
  // Bytes kept from the previous chunk so a credential split across two reads is still found.
  const overlap = Math.max(0, ...patterns.map((p) => p.length - 1));
  if (scratch.length < CHUNK + overlap) scratch = Buffer.allocUnsafe(CHUNK + overlap);
  const buf = scratch;
  let carried = 0;
  let leaked = false;
  let escapes = false;
  let position = 0;
  let short = false;
  try {
    for (;;) {
      const n = readSync(fd, buf, carried, CHUNK, position);
      if (n === 0) break;
      // A regular file reads short only at its end: no further read to find it.
      if (n < CHUNK) short = true;
      hash.update(buf.subarray(carried, carried + n));
      position += n;
      if (Date.now() > deadline)
        return { ok: false, code: TIMED_OUT, message: `stopped after ${position} bytes` };
      const window = buf.subarray(0, carried + n);
      if (!leaked && patterns.some((p) => window.indexOf(p) >= 0)) leaked = true;
      if (!escapes && patterns.length > 0) escapes = window.indexOf(BACKSLASH) >= 0;
      if (short) break;
      carried = Math.min(overlap, window.length);
      window.copy(buf, 0, window.length - carried);
    }
    // A JSON document can spell a credential with escapes (`\u0061`, `\/`), which its readers
    // decode: with a backslash in it, its decoded strings are scanned too.
    if (!leaked && escapes && position <= DECODED_SCAN_MAX_BYTES) {
      const whole = Buffer.allocUnsafe(position);
      let read = 0;
      while (read < position) {
        const n = readSync(fd, whole, read, position - read, read);
        if (n === 0) break;
        read += n;
      }
      leaked = decodedJsonLeak(whole.subarray(0, read), needles);
    }
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return { ok: false, code: e.code ?? 'EIO', message: e.message };
  }
  return { ok: true, sha256: hash.digest('hex'), bytes: position, leaked };
}

/** The code of a hash abandoned at its deadline. */
export const TIMED_OUT = 'ETIMEDOUT';
const BACKSLASH = 0x5c;
/** Documents the gate parses are at most this large (readArtifact's bound). */
const DECODED_SCAN_MAX_BYTES = 8 * 1024 * 1024;

/** JSON's whitespace, as bytes: space, tab, line feed, carriage return. */
const JSON_SPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);
/** The bytes a JSON text holding a string starts with: an object, an array or a string. */
const STRING_HOLDERS = new Set([0x7b, 0x5b, 0x22]);

/**
 * Whether bytes[start, end) may be a JSON text holding a string: its first byte after JSON's
 * whitespace opens an object, an array or a string (a number, true, false or null holds none, and
 * JSON.parse takes nothing else before it: a byte that decodes to anything but ASCII cannot start
 * one).
 */
function mayHoldStrings(bytes: Buffer, start: number, end: number): boolean {
  let i = start;
  while (i < end && JSON_SPACE.has(bytes[i] as number)) i++;
  return i < end && STRING_HOLDERS.has(bytes[i] as number);
}

/**
 * Whether a JSON text (or JSON Lines, line by line) holds a needle in a string or a member name
 * once decoded as UTF-8. Text that is not JSON is judged by its bytes alone: no reader decodes it.
 * Only what may hold a string is decoded and parsed: a binary file's lines are almost all refused
 * by their first byte, where decoding the whole file and a thrown parse error per line cost 350 ms
 * per MiB of random bytes, most of the gate's time for a root of binary artifacts. Lines are split
 * at 0x0a before decoding, as after: UTF-8 never uses that byte inside a character, and a decoder
 * never takes it into a replaced sequence.
 */
export function decodedJsonLeak(bytes: Buffer, needles: readonly string[]): boolean {
  const wanted = needles.filter((n) => n !== '');
  const docs: unknown[] = [];
  const parse = (start: number, end: number) => {
    if (!mayHoldStrings(bytes, start, end)) return false;
    try {
      docs.push(JSON.parse(bytes.toString('utf8', start, end)));
      return true;
    } catch {
      return false; // not JSON
    }
  };
  if (!parse(0, bytes.length)) {
    for (let start = 0; start < bytes.length; ) {
      const newline = bytes.indexOf(0x0a, start);
      const end = newline === -1 ? bytes.length : newline;
      parse(start, end);
      start = end + 1;
    }
  }
  const holds = (s: string) => wanted.some((n) => s.includes(n));
  while (docs.length > 0) {
    const v = docs.pop();
    if (typeof v === 'string') {
      if (holds(v)) return true;
    } else if (typeof v === 'object' && v !== null) {
      for (const [name, member] of Object.entries(v)) {
        if (holds(name)) return true;
        docs.push(member);
      }
    }
  }
  return false;
}

/**
 * Opens (with every no-link check of openArtifactSync), hashes and closes one artifact inside the
 * worker, so a batch of small files costs one task and no main-thread round-trip per syscall.
 * Unless `known` is given, the file is read; with it, a file whose identity is unchanged is not.
 */
export function claimOne(
  root: string,
  path: string,
  needles: readonly string[],
  opts: ClaimFileOptions = {},
): ClaimResult {
  const openedAt = Date.now();
  let opened: ReturnType<typeof openArtifactSync>;
  try {
    opened = openArtifactSync(root, path, opts.checkedDirs);
  } catch (err) {
    const message = err instanceof ArtifactError ? err.message : `${path} cannot be opened (${String(err)})`;
    return { ok: false, path, missing: message === `${path} does not exist`, message };
  }
  try {
    const { size, mtimeMs, identity, ctimeNs } = opened;
    const { clean = null, known = null } = opts;
    const { maxBytes = Number.POSITIVE_INFINITY, timeoutMs = Number.POSITIVE_INFINITY } = opts;
    if (size > maxBytes) return { ok: false, path, missing: false, message: tooLarge(path, size, maxBytes) };
    // The bytes last hashed, unchanged since (no user can set ctime back), and scanned clean if asked.
    if (known?.identity === identity && (needles.length === 0 || clean === known.sha256))
      return { ok: true, path, sha256: known.sha256, size, mtimeMs, leaked: false, identity, cached: true };
    if (size > (opts.deferAbove ?? Number.POSITIVE_INFINITY))
      return { ok: false, path, missing: false, message: `${path} is hashed on its own`, deferred: true };
    const deadline = Date.now() + timeoutMs;
    // Bytes whose digest was already scanned clean for these needles need no second scan; any
    // other bytes (the digest moved) are scanned in a second pass, whose result is reported.
    let r = hashDescriptor(opened.fd, clean ? [] : needles, deadline);
    if (r.ok && clean && r.sha256 !== clean) r = hashDescriptor(opened.fd, needles, deadline);
    if (!r.ok) {
      const message =
        r.code === TIMED_OUT ? hashTimedOut(path, timeoutMs) : `${path} cannot be read (${r.code})`;
      return { ok: false, path, missing: false, message };
    }
    const settled = ctimeNs < BigInt(openedAt - SETTLED_CTIME_MS) * 1_000_000n;
    return {
      ok: true,
      path,
      sha256: r.sha256,
      size,
      mtimeMs,
      leaked: r.leaked,
      ...(settled ? { identity } : {}),
    };
  } finally {
    closeSync(opened.fd);
  }
}

export type WorkerTask =
  | {
      op: 'hash';
      fds: number[];
      /** Byte strings that must not occur in the files (credential values on completed-run reads). */
      needles?: string[];
      /** Hashing one file may take this long (HARNESS_REHASH_TIMEOUT_MS). */
      timeoutMs?: number;
    }
  | ({
      op: 'claim';
      root: string;
      paths: string[];
      needles?: string[];
      /** Per path: a digest already scanned clean for these needles, or null. */
      clean?: (string | null)[];
      /** Per path: the identity and digest it had when last hashed, or null. */
      known?: ClaimFileOptions['known'][];
    } & Pick<ClaimFileOptions, 'maxBytes' | 'timeoutMs' | 'deferAbove'>)
  /** Ed25519 verification (pure; the payload arrives as a Uint8Array copy). */
  | { op: 'verify-ed25519'; verify: VerifyTask }
  /** Part of the lstat inventory of an artifact root (stat-inventory.ts). */
  | { op: 'stat-walk'; root: string; dirs: string[]; levels: number }
  /**
   * Reads, hashes and parses one agent-written document (document-refs.ts); `known` are the
   * digests whose references the main thread already holds, so those bytes are not parsed.
   */
  | { op: 'document-refs'; root: string; path: string; known: string[] };

/** Piscina entry point: one task may carry many small files (batched) or one large one. */
export default function run(
  task: WorkerTask,
): HashResult[] | ClaimResult[] | VerifyResult | DocumentScan | StatWalkPart | null {
  switch (task.op) {
    case 'hash': {
      const timeoutMs = task.timeoutMs ?? Number.POSITIVE_INFINITY;
      return task.fds.map((fd) => hashDescriptor(fd, task.needles, Date.now() + timeoutMs));
    }
    case 'claim': {
      const checkedDirs = new Set<string>();
      return task.paths.map((path, i) =>
        claimOne(task.root, path, task.needles ?? [], {
          clean: task.clean?.[i] ?? null,
          known: task.known?.[i] ?? null,
          maxBytes: task.maxBytes,
          timeoutMs: task.timeoutMs,
          deferAbove: task.deferAbove,
          checkedDirs,
        }),
      );
    }
    case 'verify-ed25519':
      return verifyEd25519(task.verify);
    case 'stat-walk':
      return statWalk(task.root, task.dirs, task.levels);
    case 'document-refs':
      return scanDocument(task.root, task.path, new Set(task.known));
    default:
      return [];
  }
}
