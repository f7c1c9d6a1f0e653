import { createHash } from 'node:crypto';
import { readFile, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * What an agent that writes `.git/index` by hand can do and no git command does: give `path`'s
 * entry the object name `oid` while keeping the stat data git recorded for the file's current,
 * edited bytes. Git then takes the file as holding `oid` without reading it. Index versions 2 and
 * 3 of a sha1 repository (what git writes by default); the trailing checksum is recomputed.
 */
export async function forgeIndexEntry(
  repo: string,
  path: string,
  oid: string,
  git: (...args: string[]) => Promise<string>,
): Promise<void> {
  // Older than the index about to be written, so the entry is not racily clean (which would
  // make git read the file anyway); then stat data recorded by git itself.
  const past = new Date(Date.now() - 60_000);
  await utimes(join(repo, path), past, past);
  await git('update-index', '--', path);
  const indexPath = join(repo, '.git', 'index');
  const index = await readFile(indexPath);
  const version = index.readUInt32BE(4);
  if (index.toString('latin1', 0, 4) !== 'DIRC' || (version !== 2 && version !== 3))
    throw new Error(`cannot forge an index of version ${version}`);
  let at = 12;
  for (let i = 0; i < index.readUInt32BE(8); i++) {
    // 40 bytes of stat data, the object name, 2 bytes of flags (and 2 more when extended).
    const flags = index.readUInt16BE(at + 60);
    const nameAt = at + 62 + (flags & 0x4000 ? 2 : 0);
    const nameEnd = index.indexOf(0, nameAt);
    if (index.toString('utf8', nameAt, nameEnd) === path) {
      Buffer.from(oid, 'hex').copy(index, at + 40);
      const body = index.subarray(0, index.length - 20);
      createHash('sha1')
        .update(body)
        .digest()
        .copy(index, index.length - 20);
      await writeFile(indexPath, index);
      return;
    }
    at += (nameEnd - at + 8) & ~7;
  }
  throw new Error(`${path} has no index entry`);
}
