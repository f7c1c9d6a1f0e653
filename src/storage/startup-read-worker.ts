/**
 * The startup reader's thread (startup-read.ts): made as the bridge command starts, it loads its
 * modules, reads the run index once it is told the data directory, and waits for the lease. Then
 * it checks the index file is the one it read (or reads it again), scans the data directory's
 * layout, sends both back (the run table's columns transferred, not copied) and ends.
 */
import type { BigIntStats } from 'node:fs';
import { join } from 'node:path';
import { parentPort } from 'node:worker_threads';
import { scanLayout } from './layout.js';
import { StartupError } from './lease.js';
import { openNoFollow, READ } from './no-follow.js';
import { type IndexRead, RUN_INDEX_FILE, readIndexFile } from './run-index-file.js';
import { type StartupReadInput, toMessage } from './startup-read.js';

const port = parentPort!;

/**
 * The index file's identity: a file the bridge appended to or replaced differs in one of these.
 * Taken from a handle opened for it, not the path: on a network file system an open revalidates
 * what a path's cached attributes may not.
 */
async function identity(path: string): Promise<string> {
  const handle = await openNoFollow(path, READ).catch(() => null);
  if (handle === null) return 'absent';
  try {
    const s: BigIntStats = await handle.stat({ bigint: true });
    return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
  } finally {
    await handle.close();
  }
}

/** The index as read, with the file's identity taken before the read. */
async function readIndex(input: StartupReadInput, key: Buffer): Promise<{ read: IndexRead; before: string }> {
  const path = join(input.dataDir, RUN_INDEX_FILE);
  const before = await identity(path);
  return { read: await readIndexFile(path, key, input.trustPin), before };
}

let prepared: {
  input: StartupReadInput;
  key: Buffer;
  index: Promise<{ read: IndexRead; before: string }>;
} | null = null;

port.on('message', async (m: { prepare: StartupReadInput } | { read: true }) => {
  if ('prepare' in m) {
    const input = m.prepare;
    const key = Buffer.from(input.key.buffer, input.key.byteOffset, input.key.byteLength);
    const index = readIndex(input, key);
    index.catch(() => {});
    prepared = { input, key, index };
    return;
  }
  try {
    if (prepared === null) throw new Error('the startup reader was not told the data directory');
    const { input, key } = prepared;
    let { read, before } = await prepared.index;
    // Read before the lease: what the lease holder before this one wrote since is read again.
    if ((await identity(join(input.dataDir, RUN_INDEX_FILE))) !== before)
      ({ read } = await readIndex(input, key));
    const found = await scanLayout(
      input.dataDir,
      key,
      input.trustPin,
      input.maxRuns,
      read.kind === 'read' ? read.dirs : undefined,
    );
    const { message, transfer } = toMessage(read, found);
    port.postMessage(message, transfer);
  } catch (err) {
    port.postMessage({ failure: (err as Error).message, startup: err instanceof StartupError });
  }
  port.close();
});
