/** Checks kept, and the paths they may hold together. */
export const ROOT_CHECK_CACHE_MAX_ENTRIES = 64;
export const ROOT_CHECK_CACHE_MAX_PATHS = 262_144;

/**
 * Whole artifact checks of a completed run's read (src/server/artifact-check.ts), by a key that
 * holds the root's lstat inventory digest (stat-inventory.ts): an equal digest of a settled root
 * means no entry under it changed since the check read it, so its result stands without opening
 * a file. Each entry answers until the earliest moment one of its digests was last read from the
 * file plus DIGEST_CACHE_TTL_MS, as the per-file digest cache does (digest-cache.ts says why);
 * least recently used out, bounded in entries and in paths.
 */
export class RootCheckCache<T> {
  private readonly entries = new Map<string, { value: T; paths: number; until: number }>();
  private paths = 0;
  /** Reads answered from here, and checks kept; tests and the bench read them. */
  readonly stats = { hits: 0, kept: 0 };

  constructor(
    private readonly maxEntries = ROOT_CHECK_CACHE_MAX_ENTRIES,
    private readonly maxPaths = ROOT_CHECK_CACHE_MAX_PATHS,
    private readonly now: () => number = Date.now,
  ) {}

  get(key: string): T | null {
    const entry = this.entries.get(key);
    if (!entry) return null;
    this.drop(key);
    if (this.now() > entry.until) return null;
    this.entries.set(key, entry);
    this.paths += entry.paths;
    this.stats.hits++;
    return entry.value;
  }

  set(key: string, value: T, paths: number, until: number): void {
    this.drop(key);
    if (paths > this.maxPaths) return;
    this.entries.set(key, { value, paths, until });
    this.paths += paths;
    this.stats.kept++;
    for (const k of this.entries.keys()) {
      if (this.entries.size <= this.maxEntries && this.paths <= this.maxPaths) break;
      this.drop(k);
    }
  }

  clear(): void {
    this.entries.clear();
    this.paths = 0;
  }

  private drop(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.paths -= entry.paths;
  }
}
