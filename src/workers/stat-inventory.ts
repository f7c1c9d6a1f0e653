import { createHash } from 'node:crypto';
import { lstatSync, readdirSync } from 'node:fs';
import { sep } from 'node:path';

/** Beyond this many entries the root has no inventory digest: callers must not cache on it. */
export const STAT_INVENTORY_MAX_ENTRIES = 1_000_000;
/**
 * How deep the first part of a walk goes: the directories it reaches at this depth are walked by
 * further tasks, spread over the pool's threads (HashPool.statInventory).
 */
export const STAT_TOP_LEVELS = 2;

/**
 * A digest is kept for a file only when its ctime is this much older than the moment the worker
 * opened it: a write in the same clock tick as the fstat (the kernel's timestamps are coarse), or
 * one begun just before it and still copying, leaves ctime where the fstat saw it. The same holds
 * for a whole root's lstat inventory (StatInventory.settled).
 */
export const SETTLED_CTIME_MS = 1000;

/**
 * What an artifact root looks like to lstat: a digest of everything under it, walked without
 * following links, per entry its relative path, type, size, mtime and ctime in nanoseconds, inode
 * and device, in path order. No file is read. Any write, rename, link, deletion or metadata change
 * under the root moves some ctime, which no user can set back, so an equal digest means nothing
 * changed that a validator could have read. `settled`: every ctime seen was at least
 * SETTLED_CTIME_MS older than the walk (the kernel's timestamps are coarse, so a change in the
 * same tick as an lstat could leave the ctime it saw), which a cache of what was read under the
 * root needs beyond an equal digest.
 */
export interface StatInventory {
  digest: string;
  settled: boolean;
}

/** One task's part of a walk: a digest per directory given, and the directories left below. */
export interface StatWalkPart {
  digests: string[];
  entries: number;
  /** The newest ctime seen, in ns, as a decimal string. */
  newestCtimeNs: string;
  /** Directories at the depth limit, in path order: their entries are not in `digests`. */
  frontier: string[];
}

const typeOf = (st: ReturnType<typeof lstatSync> & object) =>
  st.isFile() ? 'f' : st.isDirectory() ? 'd' : st.isSymbolicLink() ? 'l' : 'o';

/**
 * Walks each of `dirs` (relative to `root`; '' is the root itself, with its own line) `levels`
 * levels deep. Null when the walk fails or passes `maxEntries`.
 */
export function statWalk(
  root: string,
  dirs: readonly string[],
  levels: number,
  maxEntries = STAT_INVENTORY_MAX_ENTRIES,
): StatWalkPart | null {
  let entries = 0;
  let newest = 0n;
  const frontier: string[] = [];
  const walk = (hash: ReturnType<typeof createHash>, dir: string, rel: string, left: number): boolean => {
    const names = readdirSync(dir).sort();
    for (const name of names) {
      if (++entries > maxEntries) return false;
      const path = `${dir}${sep}${name}`;
      const relPath = rel === '' ? name : `${rel}/${name}`;
      const st = lstatSync(path, { bigint: true });
      const type = typeOf(st);
      if (st.ctimeNs > newest) newest = st.ctimeNs;
      hash.update(
        `${JSON.stringify(relPath)} ${type} ${st.size} ${st.mtimeNs} ${st.ctimeNs} ${st.ino} ${st.dev}\n`,
      );
      if (type !== 'd') continue;
      if (left <= 1) frontier.push(relPath);
      else if (!walk(hash, path, relPath, left - 1)) return false;
    }
    return true;
  };
  try {
    const digests: string[] = [];
    for (const rel of dirs) {
      const hash = createHash('sha256');
      const dir = rel === '' ? root : `${root}${sep}${rel.split('/').join(sep)}`;
      if (rel === '') {
        const top = lstatSync(root, { bigint: true });
        if (top.ctimeNs > newest) newest = top.ctimeNs;
        hash.update(`. ${top.mtimeNs} ${top.ctimeNs} ${top.ino} ${top.dev}\n`);
      }
      if (!walk(hash, dir, rel, levels)) return null;
      digests.push(hash.digest('hex'));
    }
    return { digests, entries, newestCtimeNs: newest.toString(), frontier };
  } catch {
    return null;
  }
}

/**
 * The inventory from a walk's parts: the top (the root, STAT_TOP_LEVELS deep) and, in its
 * frontier's order, one digest per directory of the frontier, however the frontier was split.
 */
export function combineWalk(
  top: StatWalkPart,
  below: readonly StatWalkPart[],
  startedAt: number,
): StatInventory | null {
  const hash = createHash('sha256').update('harness.stat-inventory.v2\n');
  let entries = top.entries;
  let newest = BigInt(top.newestCtimeNs);
  for (const d of top.digests) hash.update(`${d}\n`);
  for (const part of below) {
    entries += part.entries;
    if (BigInt(part.newestCtimeNs) > newest) newest = BigInt(part.newestCtimeNs);
    for (const d of part.digests) hash.update(`${d}\n`);
  }
  if (entries > STAT_INVENTORY_MAX_ENTRIES) return null;
  return { digest: hash.digest('hex'), settled: newest < BigInt(startedAt - SETTLED_CTIME_MS) * 1_000_000n };
}

/** The whole walk on the calling thread (tests; the pool spreads the part below the top). */
export function statInventoryDigest(root: string): string | null {
  return statInventoryHere(root)?.digest ?? null;
}

export function statInventoryHere(root: string): StatInventory | null {
  const startedAt = Date.now();
  const top = statWalk(root, [''], STAT_TOP_LEVELS);
  if (top === null) return null;
  const below = statWalk(root, top.frontier, Number.POSITIVE_INFINITY);
  return below === null ? null : combineWalk(top, [below], startedAt);
}
