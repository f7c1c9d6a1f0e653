import type { OpenRun } from './types.js';

/**
 * Trims a store's cache of open runs (a Map in least-recently-used order) to `size`, evicting the
 * oldest unpinned runs first; a pinned run is never evicted, so the cache may stay over its size
 * while every run in it is in use.
 */
export function trimOpenRuns<R extends OpenRun>(
  cache: Map<string, R>,
  size: number,
  evict: (run: R) => void,
): void {
  if (cache.size <= size) return;
  for (const run of cache.values()) {
    if (cache.size <= size) break;
    if (run.pins === 0) evict(run);
  }
}
