import { LeaseLostError } from './lease.js';

/**
 * A write or sync of the data directory that makes or keeps records durable failed (the commit
 * log, a journal written behind it, the run index synced at a checkpoint). Durability of what
 * followed the last good write is unknown, so the commit log refuses every further append and the
 * bridge stops (src/server/start.ts): a restart replays the log. The message names what was being
 * done to which file, and the system's error.
 */
export class StorageFailure extends Error {
  override readonly name = 'StorageFailure';
  /** The system error's code (`EIO`, `ENOSPC`, `EFBIG`), when it has one. */
  readonly code: string | undefined;

  private constructor(doing: string, file: string, cause: unknown) {
    super(`${doing} ${file}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.code = (cause as NodeJS.ErrnoException | null)?.code;
  }

  /**
   * `err` named as a failure of `doing` to `file`; a failure already named, or a lost lease (the
   * bridge stops for that on its own path), passes as it is.
   */
  static of(doing: string, file: string, err: unknown): StorageFailure | LeaseLostError {
    if (err instanceof StorageFailure || err instanceof LeaseLostError) return err;
    return new StorageFailure(doing, file, err);
  }
}

/** A `.catch` handler that rethrows the failure named as `doing` to `file` (StorageFailure.of). */
export const rethrowAs =
  (doing: string, file: string) =>
  (err: unknown): never => {
    throw StorageFailure.of(doing, file, err);
  };
