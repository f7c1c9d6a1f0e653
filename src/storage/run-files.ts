import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { JournalEntry, RunConfig, RunState } from '../contract/index.js';
import { applyEntry, CONFIG_MAX_BYTES, emptyState, JOURNAL_MAX_BYTES } from '../contract/index.js';
import { fsyncDir } from './atomic.js';
import type { CommitLog } from './commit-log.js';
import { IdIndex } from './id-index.js';
import { JournalWriter } from './journal.js';
import { scanJournal } from './journal-scan.js';
import { mac, macEqual } from './mac.js';
import { LinkedFileError } from './no-follow.js';
import { type RunPaths, runDirName } from './paths.js';
import { parseSealed, readSealed, sealText, writeSealed } from './sealed-file.js';
import { readSnapshot, type SnapshotRead } from './snapshot.js';
import type { OpenRun } from './types.js';

/** An open run of the file store: its files, its journal writer and its snapshot schedule. */
export interface FileRun extends OpenRun<JournalWriter> {
  paths: RunPaths;
  /** Appends since the snapshot was last written. */
  sinceSnapshot: number;
}

/** Why a run cannot be opened as trusted state; the store quarantines it with this reason. */
export class RunIntegrityError extends Error {
  override readonly name = 'RunIntegrityError';
}

/** The MAC domain of run-config.json. */
const CONFIG_DOMAIN = 'harness.run-config.v1';

export function readConfig(path: string, key: Buffer): Promise<RunConfig> {
  return readSealed<RunConfig>(path, key, CONFIG_DOMAIN, CONFIG_MAX_BYTES);
}

export function parseConfig(text: string, key: Buffer): RunConfig {
  return parseSealed<RunConfig>(text, key, CONFIG_DOMAIN, CONFIG_MAX_BYTES);
}

/** The MAC sealed into run-config.json: record 0 of the run's journal chains from it. */
export function configMac(key: Buffer, config: RunConfig): string {
  return mac(key, CONFIG_DOMAIN, config);
}

export function writeConfig(path: string, key: Buffer, config: RunConfig): Promise<void> {
  return writeSealed(path, key, CONFIG_DOMAIN, config, CONFIG_MAX_BYTES);
}

/** run-config.json's text, as `writeConfig` writes it. */
export function configText(key: Buffer, config: RunConfig): string {
  return sealText(key, CONFIG_DOMAIN, config, CONFIG_MAX_BYTES);
}

const tmpRunDir = (dataDir: string, runId: string): string =>
  join(dataDir, `.tmp-${runDirName(runId)}-${randomBytes(4).toString('hex')}`);

/**
 * Creates the run directory with its sealed config and a journal (empty, or `journal`: records
 * already authenticated elsewhere, as `harness store copy` brings them), atomically. A creation
 * that fails for any reason removes what it made: a temp directory left behind per refused request
 * would pile up until the next start (and count against nothing the bridge can see at runtime).
 */
export async function createRunFiles(
  dataDir: string,
  paths: RunPaths,
  key: Buffer,
  config: RunConfig,
  journal = '',
): Promise<void> {
  const tmp = tmpRunDir(dataDir, config.runId);
  await mkdir(tmp, { mode: 0o700 });
  let placed = false;
  try {
    await writeConfig(join(tmp, 'run-config.json'), key, config);
    const file = await open(join(tmp, 'events.jsonl'), 'wx', 0o600);
    try {
      if (journal !== '') await file.writeFile(journal);
      await file.sync();
    } finally {
      await file.close();
    }
    await fsyncDir(tmp);
    await rename(tmp, paths.dir);
    placed = true;
    await fsyncDir(dataDir);
  } catch (err) {
    // Whatever is left here is a `.tmp-run-` name, which startup removes.
    await (placed
      ? removeRunDirectory(dataDir, paths.dir, config.runId)
      : rm(tmp, { recursive: true, force: true })
    ).catch(() => {});
    throw err;
  }
}

/**
 * Removes a run directory: renamed to a `.tmp-run-` name first, which startup removes, so a crash
 * mid-removal never leaves a config-less run directory or a run the store did not index.
 */
export async function removeRunDirectory(dataDir: string, dir: string, runId: string): Promise<void> {
  const tmp = tmpRunDir(dataDir, runId);
  await rename(dir, tmp);
  await fsyncDir(dataDir);
  await rm(tmp, { recursive: true, force: true });
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
  limits: {
    journalMaxBytes?: number;
    snapshotMaxBytes?: number;
    /** What the run index recorded of the run: its creation stamp and latest durable head. */
    indexed?: { createdAt: string; count: number; head: string | null };
  } = {},
): Promise<{ run: FileRun; snapshotStale: boolean; truncatedBytes: number }> {
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
  // The snapshot is read first so the journal's entries can be applied as they stream by (a
  // journal may be gigabytes: its entries are never all held at once). Its failures are reported
  // after the journal's, as before; a state built on a snapshot that then fails is discarded.
  let snap: SnapshotRead | null = null;
  let snapError: Error | null = null;
  try {
    snap = await readSnapshot(paths.snapshot, key, limits.snapshotMaxBytes);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') snapError = err as Error;
  }
  const usable = snap !== null && snap.runId === runId ? snap : null;
  // A superseded snapshot's state is set aside (null): the journal is replayed in full.
  const state: RunState = usable?.state ?? emptyState(runId, config.createdAt);
  const from = usable?.state ? usable.count : 0;
  const ids = new IdIndex();
  const onEntry = (entry: JournalEntry) => {
    ids.add(entry.event.id, entry.seq);
    if (entry.seq >= from) applyEntry(state, entry);
  };
  const genesis = configMac(key, config);
  const scan = await scanJournal(key, runId, paths.journal, { onEntry, genesis }).catch((err: Error) =>
    fail(`events.jsonl: ${err.message}`),
  );
  const indexed = limits.indexed;
  if (indexed) {
    // A journal behind its recorded head was put back to an earlier state (or lost records the
    // index saw durable); one that differs at the head is another journal altogether.
    if (indexed.createdAt !== config.createdAt) fail('run-config.json differs from the run index');
    if (scan.count < indexed.count)
      fail(`rolled back to record ${scan.count} of ${indexed.count} (the run index holds the later head)`);
    const at = indexed.count === 0 ? null : scan.macs[indexed.count - 1];
    if (at !== null && (at === undefined || indexed.head === null || !macEqual(at, indexed.head)))
      fail(`events.jsonl differs from the run index at record ${indexed.count}`);
  }
  if (snapError) fail(`run.json: ${snapError.message}`);
  if (snap) {
    if (!usable) fail('run.json belongs to another run');
    if (snap.count > scan.count) fail('run.json is ahead of the journal (journal records are missing)');
    const head = snap.count === 0 ? null : scan.macs[snap.count - 1];
    if (head !== null && (head === undefined || !macEqual(head, snap.headMac))) {
      fail('run.json is not bound to this journal');
    }
  }
  // A link swapped in since the scan is refused here too: the writer opens the file again.
  const journal = await JournalWriter.open(
    key,
    runId,
    paths.journal,
    scan,
    commitLog,
    genesis,
    limits.journalMaxBytes ?? JOURNAL_MAX_BYTES,
  ).catch((err: Error) =>
    err instanceof LinkedFileError ? fail(`events.jsonl: ${err.message}`) : Promise.reject(err),
  );
  const run: FileRun = {
    runId,
    paths,
    config,
    state,
    journal,
    ids,
    sinceSnapshot: scan.count - from,
    pins: 0,
  };
  return {
    run,
    snapshotStale: snap?.state == null || from < scan.count,
    truncatedBytes: scan.truncatedBytes,
  };
}
