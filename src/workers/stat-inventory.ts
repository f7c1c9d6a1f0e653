import { createHash } from 'node:crypto';
import { lstatSync, readdirSync } from 'node:fs';
import { sep } from 'node:path';

/** Beyond this many entries the root has no inventory digest: callers must not cache on it. */
export const STAT_INVENTORY_MAX_ENTRIES = 1_000_000;

/**
 * A digest of everything under `root` as lstat sees it, walked without following links: per
 * entry its relative path, type, size, mtime and ctime in nanoseconds, inode and device, sorted
 * by path. No file is read. Any write, rename, link, deletion or metadata change under the root
 * moves some ctime, which no user can set back, so an equal digest means nothing changed that a
 * validator could have read. Null when the walk fails or passes the entry ceiling.
 */
export function statInventoryDigest(root: string): string | null {
  const hash = createHash('sha256').update('harness.stat-inventory.v1\n');
  let entries = 0;
  const walk = (dir: string, rel: string): boolean => {
    const names = readdirSync(dir).sort();
    for (const name of names) {
      if (++entries > STAT_INVENTORY_MAX_ENTRIES) return false;
      const path = `${dir}${sep}${name}`;
      const relPath = rel === '' ? name : `${rel}/${name}`;
      const st = lstatSync(path, { bigint: true });
      const type = st.isFile() ? 'f' : st.isDirectory() ? 'd' : st.isSymbolicLink() ? 'l' : 'o';
      hash.update(
        `${JSON.stringify(relPath)} ${type} ${st.size} ${st.mtimeNs} ${st.ctimeNs} ${st.ino} ${st.dev}\n`,
      );
      if (type === 'd' && !walk(path, relPath)) return false;
    }
    return true;
  };
  try {
    const top = lstatSync(root, { bigint: true });
    hash.update(`. ${top.mtimeNs} ${top.ctimeNs} ${top.ino} ${top.dev}\n`);
    return walk(root, '') ? hash.digest('hex') : null;
  } catch {
    return null;
  }
}
