import type { ClaimResult } from './tasks.js';

/** Files whose digests are kept, and how long a kept digest answers before the file is read again. */
export const DIGEST_CACHE_MAX_ENTRIES = 32_768;
export const DIGEST_CACHE_TTL_MS = 10 * 60_000;

interface Entry {
  identity: string;
  sha256: string;
  /** When the file was last read and hashed (a hit does not move it). */
  hashedAt: number;
}

/**
 * The SHA-256 of files hashed in the pool, by real root and path, each with the identity its
 * opened descriptor had when it was hashed: device, inode, size, and mtime and ctime in
 * nanoseconds (`fileIdentity` in tasks.ts). A completed-run read that opens the file (with every
 * no-link check) and finds that identity takes the digest without reading a byte: any write,
 * truncation, rename over it or metadata change moves ctime, which only root can set, so a
 * rewrite with its size and mtime put back (utimes) is hashed again. The worker keeps no digest
 * for a file whose ctime was less than a second old when it opened it (the kernel's timestamps
 * are coarse, so a write in the same tick as the fstat would leave ctime as it saw it).
 *
 * A kept digest answers for at most DIGEST_CACHE_TTL_MS after the file was read: writes through
 * a shared memory mapping to a page already written change the bytes without moving ctime until
 * the page is written back, and on tmpfs never move it, so an unchanged identity is trusted only
 * so long. One cache for the bridge (entries by real root and path), least recently used out. The
 * completion gate never takes a digest from it (SPEC rule 10 re-hashes around the validators);
 * what it hashes is kept.
 */
export class DigestCache {
  private readonly entries = new Map<string, Entry>();
  /** Files answered from here, and files read and hashed with their digest kept; tests read them. */
  readonly stats = { hits: 0, kept: 0 };

  constructor(
    private readonly maxEntries = DIGEST_CACHE_MAX_ENTRIES,
    private readonly ttlMs = DIGEST_CACHE_TTL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** The identity and digest `path` was last hashed with, while that is recent enough to trust. */
  get(realRoot: string, path: string): { identity: string; sha256: string; hashedAt: number } | null {
    const key = `${realRoot}\0${path}`;
    const entry = this.entries.get(key);
    if (!entry) return null;
    this.entries.delete(key);
    if (this.now() - entry.hashedAt > this.ttlMs) return null;
    this.entries.set(key, entry);
    return { identity: entry.identity, sha256: entry.sha256, hashedAt: entry.hashedAt };
  }

  /** Takes in a claim: counts a hit, keeps a digest the worker hashed with a settled identity. */
  record(realRoot: string, result: Extract<ClaimResult, { ok: true }>): void {
    if (result.cached) {
      this.stats.hits++;
      return;
    }
    const key = `${realRoot}\0${result.path}`;
    this.entries.delete(key);
    if (result.identity === undefined) return;
    this.stats.kept++;
    this.entries.set(key, { identity: result.identity, sha256: result.sha256, hashedAt: this.now() });
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
  }

  get size(): number {
    return this.entries.size;
  }
}
