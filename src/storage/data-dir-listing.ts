import { opendirSync } from 'node:fs';
import { DIGEST_BYTES, digestFromHexText } from './hex.js';

/** What a data directory entry is, as its listing says (no entry is followed or opened). */
export type EntryKind = 'directory' | 'file' | 'link' | 'other';

/**
 * The data directory's entries, as the layout check reads them (storage/layout.ts): its run
 * directories (`run-<64 lowercase hex digits>`, up to 100,000) as the 32 bytes of their hex, not
 * as names, and every other entry with what it is. A bridge with many runs lists on a thread of
 * its own while its run index is read (startup-read.ts).
 */
export interface DataDirListing {
  /** `count` run directories' hashes, 32 bytes each. */
  runDirs: Buffer;
  count: number;
  others: { name: string; kind: EntryKind }[];
}

const PREFIX = 'run-';
const NAME_CHARS = PREFIX.length + 2 * DIGEST_BYTES;

/**
 * Lists `dataDir`, synchronously, 4096 entries a call: nothing else waits on the thread that
 * lists at startup, and an asynchronous iterator's promise per entry took twice as long over
 * 100,000 entries.
 */
export function listDataDir(dataDir: string): DataDirListing {
  let runDirs = Buffer.alloc(1024 * DIGEST_BYTES);
  let count = 0;
  const others: DataDirListing['others'] = [];
  const dir = opendirSync(dataDir, { bufferSize: 4096 });
  try {
    for (let entry = dir.readSync(); entry !== null; entry = dir.readSync()) {
      const name = entry.name;
      if (entry.isDirectory() && name.length === NAME_CHARS && name.startsWith(PREFIX)) {
        if ((count + 1) * DIGEST_BYTES > runDirs.length) {
          const grown = Buffer.alloc(2 * runDirs.length);
          runDirs.copy(grown);
          runDirs = grown;
        }
        if (digestFromHexText(name, PREFIX.length, runDirs, count * DIGEST_BYTES)) {
          count++;
          continue;
        }
      }
      const kind = entry.isDirectory()
        ? 'directory'
        : entry.isFile()
          ? 'file'
          : entry.isSymbolicLink()
            ? 'link'
            : 'other';
      others.push({ name, kind });
    }
  } finally {
    dir.closeSync();
  }
  return { runDirs: runDirs.subarray(0, count * DIGEST_BYTES), count, others };
}

/** The name of the run directory whose hash is `runDirs[at, at + 32)`. */
export const runDirAt = (runDirs: Buffer, at: number): string =>
  PREFIX + runDirs.toString('hex', at, at + DIGEST_BYTES);
