import { fdatasync, ftruncate, write, writeSync } from 'node:fs';

/**
 * Promise wrappers over the raw-descriptor callback API: one thread-pool request each, without the
 * FileHandle bookkeeping, for the commit path that runs once per batch.
 */

/** Writes all of `data` at the end of the file (O_APPEND descriptors), retrying after a short write. */
export const writeAll = (fd: number, data: Buffer): Promise<void> =>
  new Promise((resolve, reject) => {
    const step = (offset: number) =>
      write(fd, data, offset, data.length - offset, null, (err, n) => {
        if (err) reject(err);
        else if (n === 0) reject(new Error('write made no progress'));
        else if (offset + n < data.length) step(offset + n);
        else resolve();
      });
    step(0);
  });

export const datasync = (fd: number): Promise<void> =>
  new Promise((resolve, reject) => fdatasync(fd, (err) => (err ? reject(err) : resolve())));

export const truncateTo = (fd: number, length: number): Promise<void> =>
  new Promise((resolve, reject) => ftruncate(fd, length, (err) => (err ? reject(err) : resolve())));

export const truncateToEmpty = (fd: number): Promise<void> => truncateTo(fd, 0);

/**
 * Writes all of `data` now, on this thread: for page-cache writes (no sync) a syscall is far
 * cheaper than a thread-pool round trip.
 */
export function writeAllSync(fd: number, data: Buffer): void {
  for (let offset = 0; offset < data.length; ) {
    const n = writeSync(fd, data, offset, data.length - offset);
    if (n === 0) throw new Error('write made no progress');
    offset += n;
  }
}
