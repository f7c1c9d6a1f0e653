import { createHash } from 'node:crypto';
import { closeSync, readSync } from 'node:fs';
import { openArtifactSync } from '../validators/artifact-open-sync.js';
import { ArtifactError } from '../validators/artifact-root.js';
import { type VerifyResult, type VerifyTask, verifyEd25519 } from '../validators/signature.js';
import { type DocumentScan, scanDocument } from './document-refs.js';
import { statInventoryDigest } from './stat-inventory.js';

/**
 * Code that runs inside a worker thread. Results are plain objects: errors crossing the thread
 * boundary lose their fields (structured clone), so failures come back as `{ ok: false, ... }`.
 */
export type HashResult =
  | { ok: true; sha256: string; bytes: number; leaked: boolean }
  | { ok: false; code: string; message: string };

/** What a claim task reports per path: the claim, or why the file cannot be claimed. */
export type ClaimResult =
  | { ok: true; path: string; sha256: string; size: number; mtimeMs: number; leaked: boolean }
  | { ok: false; path: string; missing: boolean; message: string };

const CHUNK = 1024 * 1024;
// One read buffer per thread: hashDescriptor is synchronous, so it is never used twice at once.
let scratch = Buffer.allocUnsafe(CHUNK);

/**
 * Hashes an already-opened descriptor from offset 0. Descriptors are process-wide, so the main
 * thread opens (with its no-link checks) and the worker only reads what was opened.
 */
export function hashDescriptor(fd: number, needles: readonly string[] = []): HashResult {
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
  try {
    for (;;) {
      const n = readSync(fd, buf, carried, CHUNK, position);
      if (n === 0) break;
      hash.update(buf.subarray(carried, carried + n));
      position += n;
      const window = buf.subarray(0, carried + n);
      if (!leaked && patterns.some((p) => window.indexOf(p) >= 0)) leaked = true;
      if (!escapes && patterns.length > 0) escapes = window.indexOf(BACKSLASH) >= 0;
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
      leaked = decodedJsonLeak(whole.toString('utf8', 0, read), needles);
    }
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return { ok: false, code: e.code ?? 'EIO', message: e.message };
  }
  return { ok: true, sha256: hash.digest('hex'), bytes: position, leaked };
}

const BACKSLASH = 0x5c;
/** Documents the gate parses are at most this large (readArtifact's bound). */
const DECODED_SCAN_MAX_BYTES = 8 * 1024 * 1024;

/**
 * Whether a JSON text (or JSON Lines, line by line) holds a needle in a string or a member name
 * once decoded. Text that is not JSON is judged by its bytes alone: no reader decodes it.
 */
export function decodedJsonLeak(text: string, needles: readonly string[]): boolean {
  const wanted = needles.filter((n) => n !== '');
  const docs: unknown[] = [];
  try {
    docs.push(JSON.parse(text));
  } catch {
    for (const line of text.split('\n')) {
      try {
        docs.push(JSON.parse(line));
      } catch {
        // not a JSON line
      }
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
 */
export function claimOne(
  root: string,
  path: string,
  needles: readonly string[],
  cleanDigest: string | null = null,
): ClaimResult {
  let opened: ReturnType<typeof openArtifactSync>;
  try {
    opened = openArtifactSync(root, path);
  } catch (err) {
    const message = err instanceof ArtifactError ? err.message : `${path} cannot be opened (${String(err)})`;
    return { ok: false, path, missing: message === `${path} does not exist`, message };
  }
  try {
    // Bytes whose digest was already scanned clean for these needles need no second scan; any
    // other bytes (the digest moved) are scanned in a second pass, whose result is reported.
    let r = hashDescriptor(opened.fd, cleanDigest ? [] : needles);
    if (r.ok && cleanDigest && r.sha256 !== cleanDigest) r = hashDescriptor(opened.fd, needles);
    if (!r.ok) return { ok: false, path, missing: false, message: `${path} cannot be read (${r.code})` };
    return { ok: true, path, sha256: r.sha256, size: opened.size, mtimeMs: opened.mtimeMs, leaked: r.leaked };
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
    }
  | {
      op: 'claim';
      root: string;
      paths: string[];
      needles?: string[];
      /** Per path: a digest already scanned clean for these needles, or null. */
      clean?: (string | null)[];
    }
  /** Ed25519 verification (pure; the payload arrives as a Uint8Array copy). */
  | { op: 'verify-ed25519'; verify: VerifyTask }
  /** The lstat inventory digest of an artifact root (stat-inventory.ts). */
  | { op: 'stat-inventory'; root: string }
  /**
   * Reads, hashes and parses one agent-written document (document-refs.ts); `known` are the
   * digests whose references the main thread already holds, so those bytes are not parsed.
   */
  | { op: 'document-refs'; root: string; path: string; known: string[] };

/** Piscina entry point: one task may carry many small files (batched) or one large one. */
export default function run(
  task: WorkerTask,
): HashResult[] | ClaimResult[] | VerifyResult | DocumentScan | string | null {
  switch (task.op) {
    case 'hash':
      return task.fds.map((fd) => hashDescriptor(fd, task.needles));
    case 'claim':
      return task.paths.map((p, i) => claimOne(task.root, p, task.needles ?? [], task.clean?.[i] ?? null));
    case 'verify-ed25519':
      return verifyEd25519(task.verify);
    case 'stat-inventory':
      return statInventoryDigest(task.root);
    case 'document-refs':
      return scanDocument(task.root, task.path, new Set(task.known));
    default:
      return [];
  }
}
