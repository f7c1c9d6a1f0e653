import { randomBytes } from 'node:crypto';
import { mkdir, open, rename } from 'node:fs/promises';
import { join } from 'node:path';
import type { JournalEntry, RunConfig, RunState } from '../contract/index.js';
import { applyEntry, CONFIG_MAX_BYTES, emptyState } from '../contract/index.js';
import { fsyncDir } from './atomic.js';
import type { CommitLog } from './commit-log.js';
import { IdIndex } from './id-index.js';
import { JournalWriter, scanJournal } from './journal.js';
import { macEqual } from './mac.js';
import { type RunPaths, runDirName } from './paths.js';
import { parseSealed, readSealed, writeSealed } from './sealed-file.js';
import { readSnapshot, type Snapshot } from './snapshot.js';

/** A run opened and fully authenticated: the in-memory state every append and read uses. */
export interface OpenRun {
  runId: string;
  paths: RunPaths;
  config: RunConfig;
  state: RunState;
  journal: JournalWriter;
  /** Event id -> seq candidates, for idempotent repeats (confirmed against the journal). */
  ids: IdIndex;
  /** Appends since the snapshot was last written. */
  sinceSnapshot: number;
  /** Operations currently holding the run; a pinned run is never evicted. */
  pins: number;
}

/** Why a run cannot be opened as trusted state; the store quarantines it with this reason. */
export class RunIntegrityError extends Error {
  override readonly name = 'RunIntegrityError';
}

export function readConfig(path: string, key: Buffer): Promise<RunConfig> {
  return readSealed<RunConfig>(path, key, 'harness.run-config.v1', CONFIG_MAX_BYTES);
}

export function parseConfig(text: string, key: Buffer): RunConfig {
  return parseSealed<RunConfig>(text, key, 'harness.run-config.v1', CONFIG_MAX_BYTES);
}

export function writeConfig(path: string, key: Buffer, config: RunConfig): Promise<void> {
  return writeSealed(path, key, 'harness.run-config.v1', config);
}

/** Creates the run directory with its sealed config and an empty journal, atomically. */
export async function createRunFiles(
  dataDir: string,
  paths: RunPaths,
  key: Buffer,
  config: RunConfig,
): Promise<void> {
  const tmp = join(dataDir, `.tmp-${runDirName(config.runId)}-${randomBytes(4).toString('hex')}`);
  await mkdir(tmp, { mode: 0o700 });
  await writeConfig(join(tmp, 'run-config.json'), key, config);
  const journal = await open(join(tmp, 'events.jsonl'), 'wx', 0o600);
  await journal.sync();
  await journal.close();
  await fsyncDir(tmp);
  await rename(tmp, paths.dir);
  await fsyncDir(dataDir);
}

/**
 * Opens a run: authenticates the config, the whole journal chain (truncating a torn tail) and the
 * snapshot, which must be bound to a prefix of the journal; entries after it are replayed.
 */
export async function openRunFiles(
  runId: string,
  paths: RunPaths,
  key: Buffer,
  trustPin: string,
  commitLog: CommitLog,
): Promise<{ run: OpenRun; snapshotStale: boolean; truncatedBytes: number }> {
  const fail = (reason: string): never => {
    throw new RunIntegrityError(reason);
  };
  const config = await readConfig(paths.config, key).catch((err: Error) =>
    fail(`run-config.json: ${err.message}`),
  );
  if (config.runId !== runId) fail('run-config.json belongs to another run');
  // Startup refuses a data directory holding a run sealed under another pin (storage/layout.ts);
  // this catches a config sealed under another pin that appeared after startup.
  if (config.trustPin !== trustPin)
    fail('the review-trust pin sealed in run-config.json differs from the bridge pin');
  const scan = await scanJournal(key, runId, paths.journal).catch((err: Error) =>
    fail(`events.jsonl: ${err.message}`),
  );

  let snap: Snapshot | null = null;
  try {
    snap = await readSnapshot(paths.snapshot, key);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') fail(`run.json: ${(err as Error).message}`);
  }
  let state: RunState;
  let from = 0;
  if (snap) {
    if (snap.runId !== runId) fail('run.json belongs to another run');
    if (snap.count > scan.entries.length)
      fail('run.json is ahead of the journal (journal records are missing)');
    const head = snap.count === 0 ? null : scan.macs[snap.count - 1];
    if (head !== null && (head === undefined || !macEqual(head, snap.headMac))) {
      fail('run.json is not bound to this journal');
    }
    state = snap.state;
    from = snap.count;
  } else {
    state = emptyState(runId, config.createdAt);
  }
  const ids = new IdIndex();
  for (const entry of scan.entries) ids.add(entry.event.id, entry.seq);
  for (const entry of scan.entries.slice(from)) applyEntry(state, entry as JournalEntry);
  const journal = await JournalWriter.open(key, runId, paths.journal, scan, commitLog);
  const run: OpenRun = {
    runId,
    paths,
    config,
    state,
    journal,
    ids,
    sinceSnapshot: scan.entries.length - from,
    pins: 0,
  };
  return {
    run,
    snapshotStale: snap === null || from < scan.entries.length,
    truncatedBytes: scan.truncatedBytes,
  };
}
