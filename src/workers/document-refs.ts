import { createHash } from 'node:crypto';
import { closeSync, readSync } from 'node:fs';
import { DOCUMENT_MAX_BYTES } from '../contract/limits.js';
import { openArtifactSync } from '../validators/artifact-open-sync.js';
import { type DocumentRefs, refsOfText } from './json-refs.js';

export type { DocumentRefs };

/**
 * What the bridge itself reads from an agent-written document (the run packet, review and RCA):
 * the artifact paths it names and the commit names it carries. The document is attacker-shaped
 * (8 MiB of nested arrays takes a second to parse), so it is read, hashed and parsed only here,
 * inside a pool thread, and only this bounded summary crosses back to the main thread.
 */

/**
 * A document's references with the digest of the bytes they were read from (null: no bytes could
 * be read, as for a missing file), so a caller that hashes the document again can tell whether
 * the references belong to the bytes it hashed.
 */
export type ReadDocument = DocumentRefs & { sha256: string | null };

/** A document that is missing, unreadable, escaping, too large or not JSON names nothing. */
export const NAMES_NOTHING: DocumentRefs = Object.freeze({ paths: [], commits: [] }) as DocumentRefs;

/**
 * One document as a task reports it: its digest when it could be read (null: it names nothing),
 * and its references, or null when the caller already holds them for this digest.
 */
export interface DocumentScan {
  path: string;
  sha256: string | null;
  refs: DocumentRefs | null;
}

/**
 * Opens `relPath` with every no-link check of openArtifactSync, reads it whole (at most
 * DOCUMENT_MAX_BYTES, the cap loadJson applies), hashes it and, unless its digest is in `known`,
 * reads its references. Only call it inside a worker: it blocks its thread for as long as the parse takes.
 */
export function scanDocument(root: string, relPath: string, known: ReadonlySet<string>): DocumentScan {
  let opened: ReturnType<typeof openArtifactSync>;
  try {
    opened = openArtifactSync(root, relPath);
  } catch {
    return { path: relPath, sha256: null, refs: NAMES_NOTHING };
  }
  let bytes: Buffer;
  try {
    // Too large to parse: it names nothing, but its digest still says which bytes those were.
    if (opened.size > DOCUMENT_MAX_BYTES)
      return { path: relPath, sha256: digestOf(opened.fd), refs: NAMES_NOTHING };
    const buf = Buffer.alloc(opened.size);
    let position = 0;
    while (position < opened.size) {
      const n = readSync(opened.fd, buf, position, opened.size - position, position);
      if (n === 0) break;
      position += n;
    }
    bytes = buf.subarray(0, position);
  } catch {
    return { path: relPath, sha256: null, refs: NAMES_NOTHING };
  } finally {
    closeSync(opened.fd);
  }
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  if (known.has(sha256)) return { path: relPath, sha256, refs: null };
  // Read without building the document's value (json-refs.ts); not JSON: it names nothing.
  return { path: relPath, sha256, refs: refsOfText(bytes.toString('utf8')) ?? NAMES_NOTHING };
}

/** The SHA-256 of everything readable from `fd`, read in 1 MiB chunks. */
function digestOf(fd: number): string {
  const hash = createHash('sha256');
  const chunk = Buffer.alloc(1024 * 1024);
  for (let position = 0; ; ) {
    const n = readSync(fd, chunk, 0, chunk.length, position);
    if (n === 0) return hash.digest('hex');
    hash.update(chunk.subarray(0, n));
    position += n;
  }
}

/** Reads the references of documents under a root: HashPool.documentRefs, or documentRefsHere. */
export type DocumentRefsReader = (root: string, paths: readonly string[]) => Promise<ReadDocument[]>;

/**
 * The same reading on the calling thread, for unit tests and offline callers of functions that
 * take a reader. The server never uses it: it passes the pool's reader.
 */
export const documentRefsHere: DocumentRefsReader = async (root, paths) =>
  paths.map((p) => {
    const scan = scanDocument(root, p, new Set());
    return { ...(scan.refs ?? NAMES_NOTHING), sha256: scan.sha256 };
  });
