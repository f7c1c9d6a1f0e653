import { constants } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';

/** 0 where the platform has no O_NOFOLLOW: the startup layout check is then the only guard. */
const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const O_NONBLOCK = constants.O_NONBLOCK ?? 0;

/** A run file found to be a symbolic link: never followed, so the run is not read. */
export class LinkedFileError extends Error {
  override readonly name: string = 'LinkedFileError';
}

/**
 * A data-directory file found to be something else than a regular file (a FIFO, a socket, a
 * device): refused wherever a link is, so it is a LinkedFileError too.
 */
export class NotRegularFileError extends LinkedFileError {
  override readonly name = 'NotRegularFileError';
}

/**
 * Opens a file of the data directory (journal, snapshot, config, commit log, lease) without
 * following a symbolic link at its last component, and only if it is a regular file. Startup
 * refuses a data directory holding links, but one planted while the bridge runs would otherwise
 * be followed the next time the run is opened: a linked journal would be appended to wherever it
 * points. A read of a FIFO waits for a writer forever, wherever it is found. `O_NONBLOCK` makes the
 * open itself return at once whatever the file is (it changes nothing for a regular file). The
 * error names no path (its text becomes a quarantine reason that responses carry).
 */
export async function openNoFollow(path: string, flags: number, mode?: number): Promise<FileHandle> {
  let handle: FileHandle;
  try {
    handle = await open(path, flags | O_NOFOLLOW | O_NONBLOCK, mode);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw new LinkedFileError('is a symbolic link, which the bridge does not follow');
    // A FIFO opened for writing with no reader.
    if (code === 'ENXIO') throw new NotRegularFileError('is not a regular file');
    throw err;
  }
  const isFile = await handle.stat().then(
    (s) => s.isFile(),
    () => false,
  );
  if (!isFile) {
    await handle.close();
    throw new NotRegularFileError('is not a regular file');
  }
  return handle;
}

export const READ = constants.O_RDONLY;

/** The whole of a file, opened as `openNoFollow` opens it; one larger than `maxBytes` is refused. */
export async function readNoFollow(path: string, maxBytes = Number.POSITIVE_INFINITY): Promise<Buffer> {
  const handle = await openNoFollow(path, READ);
  try {
    if (Number.isFinite(maxBytes) && (await handle.stat()).size > maxBytes)
      throw new RangeError(`is larger than ${maxBytes} bytes`);
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/** The whole text of a file, opened as `openNoFollow` opens it. */
export async function readTextNoFollow(path: string): Promise<string> {
  return (await readNoFollow(path)).toString('utf8');
}
/**
 * The lines of a JSON Lines file the bridge appends to, read without following a link, as `pick`
 * takes them; none when the file is absent. A line that is not JSON (the torn end of an
 * interrupted append) is skipped, and the lines before it still count.
 */
export async function readJsonLines<T>(path: string, pick: (value: never) => T | null): Promise<T[]> {
  const text = await readTextNoFollow(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return '';
    throw err;
  });
  const out: T[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      continue;
    }
    const picked = typeof value === 'object' && value !== null ? pick(value as never) : null;
    if (picked !== null) out.push(picked);
  }
  return out;
}

export const READ_WRITE = constants.O_RDWR;
/** What 'a+' means: read and append, created if missing. */
export const READ_APPEND = constants.O_RDWR | constants.O_APPEND | constants.O_CREAT;
