import { randomBytes } from 'node:crypto';
import { open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** fsyncs a directory so a rename or create inside it survives a crash. */
export async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Replaces `path` atomically: write a temp file beside it, fsync it, rename over the target,
 * fsync the directory. A crash leaves either the old bytes or the new, never a mix. `data` may
 * come in chunks, written one after another, so a large file is never held whole.
 */
export async function atomicWrite(
  path: string,
  data: string | Buffer | Iterable<Buffer>,
  mode = 0o600,
): Promise<void> {
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(tmp, 'wx', mode);
  try {
    if (typeof data === 'string' || Buffer.isBuffer(data)) await handle.writeFile(data);
    // Each writeFile on a handle continues where the last one ended.
    else for (const chunk of data) await handle.writeFile(chunk);
    await handle.sync();
  } catch (err) {
    await handle.close();
    await unlink(tmp).catch(() => {});
    throw err;
  }
  await handle.close();
  try {
    await rename(tmp, path);
  } catch (err) {
    await unlink(tmp).catch(() => {});
    throw err;
  }
  await fsyncDir(dir);
}
