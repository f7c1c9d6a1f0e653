import type { DocumentRefs } from './document-refs.js';

/** Documents whose references are kept, and the UTF-16 bytes of the paths they may hold together. */
export const DOCUMENT_CACHE_MAX_ENTRIES = 256;
export const DOCUMENT_CACHE_MAX_BYTES = 32 * 1024 * 1024;

/** What an entry holds, estimated as two bytes per UTF-16 unit plus a fixed cost per string. */
function sizeOf(refs: DocumentRefs): number {
  let bytes = 64;
  for (const s of [...(refs.paths ?? []), ...refs.commits]) bytes += 32 + 2 * s.length;
  return bytes;
}

/**
 * The references of documents already parsed, by the SHA-256 of their bytes, least recently used
 * first out. A hit is sound because the references are a function of the bytes alone, and the
 * bytes are re-read and re-hashed in the pool on every check (CONTRACT 6): an edited document has
 * another digest and is parsed again. Bounded in entries and in bytes; an entry larger than the
 * byte bound is not kept.
 */
export class DocumentRefsCache {
  private readonly entries = new Map<string, { refs: DocumentRefs; bytes: number }>();
  private bytes = 0;
  /** Documents parsed in the pool, and documents answered from here; tests read them. */
  readonly stats = { parsed: 0, hits: 0 };

  constructor(
    private readonly maxEntries = DOCUMENT_CACHE_MAX_ENTRIES,
    private readonly maxBytes = DOCUMENT_CACHE_MAX_BYTES,
  ) {}

  /** The digests held, for a task to skip parsing bytes whose references are known. */
  digests(): string[] {
    return [...this.entries.keys()];
  }

  get(sha256: string): DocumentRefs | undefined {
    const entry = this.entries.get(sha256);
    if (!entry) return undefined;
    this.entries.delete(sha256);
    this.entries.set(sha256, entry);
    this.stats.hits++;
    return entry.refs;
  }

  set(sha256: string, refs: DocumentRefs): void {
    this.stats.parsed++;
    const bytes = sizeOf(refs);
    const old = this.entries.get(sha256);
    if (old) {
      this.entries.delete(sha256);
      this.bytes -= old.bytes;
    }
    if (bytes > this.maxBytes) return;
    this.entries.set(sha256, { refs, bytes });
    this.bytes += bytes;
    for (const [key, entry] of this.entries) {
      if (this.entries.size <= this.maxEntries && this.bytes <= this.maxBytes) break;
      this.entries.delete(key);
      this.bytes -= entry.bytes;
    }
  }

  get size(): number {
    return this.entries.size;
  }
}
