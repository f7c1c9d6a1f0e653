import { constants } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';

/** 0 where the platform has no O_NOFOLLOW: the startup layout check is then the only guard. */
const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;

/** A run file found to be a symbolic link: never followed, so the run is not read. */
export class LinkedFileError extends Error {
  override readonly name = 'LinkedFileError';
}

/**
 * Opens a file of a run directory (journal, snapshot, config) without following a symbolic link
 * at its last component. Startup refuses a data directory holding links, but one planted while the
 * bridge runs would otherwise be followed the next time the run is opened: a linked journal would
 * be appended to wherever it points. The error names no path (its text becomes a quarantine
 * reason that responses carry).
 */
export async function openNoFollow(path: string, flags: number, mode?: number): Promise<FileHandle> {
  try {
    return await open(path, flags | O_NOFOLLOW, mode);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ELOOP')
      throw new LinkedFileError('is a symbolic link, which the bridge does not follow');
    throw err;
  }
}

export const READ = constants.O_RDONLY;

/** The whole text of a file, opened as `openNoFollow` opens it. */
export async function readTextNoFollow(path: string): Promise<string> {
  const handle = await openNoFollow(path, READ);
  try {
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
}
export const READ_WRITE = constants.O_RDWR;
/** What 'a+' means: read and append, created if missing. */
export const READ_APPEND = constants.O_RDWR | constants.O_APPEND | constants.O_CREAT;
