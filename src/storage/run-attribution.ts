import { readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { RunConfig } from '../contract/index.js';
import type { Disputed } from './commit-log-replay.js';
import { readDriftQuarantines } from './drift-quarantines.js';
import { type LayoutConfigs, type RunDirListing, runDirListing } from './layout.js';
import { readTextNoFollow } from './no-follow.js';
import { CONFIG_FILE, isCanonicalRunId, RUN_DIR_PATTERN, runDirName, SNAPSHOT_FILE } from './paths.js';
import { RunDirSet } from './run-dir-set.js';
import { readConfig } from './run-files.js';
import { type IndexEntry, unreadEntry } from './run-index.js';
import { RunTable } from './run-table.js';

/** The creation time of a run known only by its directory: it sorts first. */
export const EPOCH = '1970-01-01T00:00:00.000Z';

/**
 * The run ID that a config which failed authentication claims, or failing that the run's snapshot
 * (a config replaced by something unreadable), or failing both a run ID the commit log named at
 * this start (`logged`: after a crash the snapshot may never have been written), each trusted
 * only if it hashes to the run's directory name `dir` (no other ID does); otherwise that name,
 * the only identity left to trust.
 */
export async function claimedRunId(
  configPath: string,
  dir: string,
  logged: readonly string[] = [],
): Promise<string> {
  for (const path of [configPath, join(dirname(configPath), SNAPSHOT_FILE)]) {
    try {
      const id = (JSON.parse(await readTextNoFollow(path)) as { runId?: unknown }).runId;
      if (typeof id === 'string' && isCanonicalRunId(id) && runDirName(id) === dir) return id;
    } catch {
      // missing, unreadable or not JSON: the next claim, then the directory name
    }
  }
  return logged.find((id) => isCanonicalRunId(id) && runDirName(id) === dir) ?? dir;
}

/**
 * Which run each run directory holds, for the store's startup index, and which of them are
 * quarantined (run ID, reason). A directory whose config fails, or belongs to another run, is
 * quarantined under the run it is named for when some authentic config names that run (two run
 * directories swapped, or one copied over another), else under the ID its config or snapshot
 * claims, or the commit log names, if that hashes to it (claimedRunId), else under the directory's
 * own name.
 */
export async function attributeRunDirs(
  dataDir: string,
  key: Buffer,
  configs: LayoutConfigs | undefined,
  logged: readonly string[] = [],
  indexed: RunDirSet = new RunDirSet(),
  listing?: RunDirListing,
): Promise<{ entries: IndexEntry[]; quarantines: [string, string][]; missing: string[] }> {
  // Runs the index holds are attributed by it (and authenticated when opened); a directory it
  // holds that is gone is reported, as is every directory it does not hold, read here in full.
  const { unindexed, missing } =
    listing ??
    runDirListing(
      (await readdir(dataDir)).filter((d) => RUN_DIR_PATTERN.test(d)),
      indexed,
    );
  const dirs = [...unindexed].sort();
  // One at a time: a data directory holds up to 100000 runs (startup's layout check has usually
  // authenticated every config already).
  const read: { dir: string; path: string; config?: RunConfig; error?: Error }[] = [];
  for (const dir of dirs) {
    const path = join(dataDir, dir, CONFIG_FILE);
    try {
      const known = configs?.get(dir);
      if (known instanceof Error) throw known;
      read.push({ dir, path, config: known ?? (await readConfig(path, key)) });
    } catch (err) {
      read.push({ dir, path, error: err as Error });
    }
  }
  // Authentic configs by the directory their run belongs in, wherever they were found.
  const belongs = new Map<string, RunConfig>();
  for (const r of read) if (r.config) belongs.set(runDirName(r.config.runId), r.config);
  const entries: IndexEntry[] = [];
  const quarantines: [string, string][] = [];
  for (const r of read) {
    if (r.config && runDirName(r.config.runId) === r.dir) {
      entries.push(unreadEntry(r.config.runId, r.config.createdAt));
      continue;
    }
    const own = belongs.get(r.dir);
    const runId = own?.runId ?? (await claimedRunId(r.path, r.dir, logged));
    entries.push(unreadEntry(runId, own?.createdAt ?? EPOCH));
    const message = r.config ? 'run-config.json belongs to another run' : (r.error as Error).message;
    quarantines.push([runId, `run-config.json: ${message}`]);
  }
  return { entries, quarantines, missing };
}

/**
 * Everything the data directory says at startup about which runs exist and which are quarantined
 * (run ID, reason), in this order: each run directory's attribution (attributeRunDirs); the runs
 * of disputed commit-log records; then drift a read recorded before this start
 * (drift-quarantines.ts), only for the run it was found on, not a later run under the same ID.
 */
export async function startupRuns(
  dataDir: string,
  key: Buffer,
  configs: LayoutConfigs | undefined,
  disputed: readonly Disputed[],
  logged: readonly string[],
  index: { runs: RunTable; dirs?: RunDirSet | undefined } | null = null,
  listing?: RunDirListing,
): Promise<{ runs: RunTable; added: IndexEntry[]; quarantines: [string, string][] }> {
  // Without the index's directories, an unlisted data directory would read as runs it lacks.
  if (index !== null && index.dirs === undefined && listing === undefined)
    throw new Error('startup needs the run index directories or the layout listing');
  const found = await attributeRunDirs(dataDir, key, configs, logged, index?.dirs, listing);
  const { quarantines } = found;
  // The index's entries, less the runs whose directory was removed (archived) while the bridge was
  // stopped, as it always has: the ID may then be used for a new run. A directory the index
  // lacks is attributed from its files, over any entry for the same run.
  const runs = index?.runs ?? new RunTable();
  for (const runId of found.missing) runs.delete(runId);
  const added = [...found.entries];
  for (const e of added) runs.set(e.runId, e);
  for (const d of disputed) {
    // A run the log names without a journal has no directory: it is indexed all the same, so
    // its ID is refused (409 run_quarantined) rather than created afresh, with writes answered
    // 201 that a later start, still finding the disputed record, would then hide.
    if (!runs.has(d.runId)) {
      if (!isCanonicalRunId(d.runId)) continue;
      const e = unreadEntry(d.runId, EPOCH);
      runs.set(d.runId, e);
      added.push(e);
    }
    quarantines.push([d.runId, d.reason]);
  }
  for (const d of await readDriftQuarantines(dataDir)) {
    if (runs.get(d.runId)?.createdAt === d.createdAt) quarantines.push([d.runId, d.reason]);
  }
  return { runs, added, quarantines };
}
