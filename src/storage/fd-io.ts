import { fdatasync, ftruncate, write } from 'node:fs';

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

export const truncateToEmpty = (fd: number): Promise<void> =>
  new Promise((resolve, reject) => ftruncate(fd, 0, (err) => (err ? reject(err) : resolve())));
