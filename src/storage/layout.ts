import type { Dirent } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { RunConfig } from '../contract/index.js';
import { RUN_DIRECTORY_MAX } from '../contract/limits.js';
import { type DataDirListing, listDataDir, runDirAt } from './data-dir-listing.js';
import { DRIFT_FILE } from './drift-quarantines.js';
import { DIGEST_BYTES } from './hex.js';
import { StartupError } from './lease.js';
import { NotRegularFileError, readTextNoFollow } from './no-follow.js';
import {
  COMMIT_LOG_FILE,
  CONFIG_FILE,
  DISPUTED_FILE,
  LEASE_FILE,
  MUTEX_FILE,
  RUN_DIR_PATTERN,
  runDirName,
  SNAPSHOT_FILE,
} from './paths.js';
import { RunDirSet } from './run-dir-set.js';
import { RUN_INDEX_FILE } from './run-index-file.js';

/** Each run directory's config as startup authenticated it, or why it failed (the run is quarantined). */
export type LayoutConfigs = Map<string, RunConfig | Error>;

/** What the data directory holds that startup refuses, entry by entry (`harness verify` reports them). */
export interface LayoutFindings {
  /** Symbolic links: a top-level entry, or `<run directory>/<entry>`. */
  links: string[];
  /**
   * `commit.log` or `commit-disputed.jsonl` when it is not a regular file (a FIFO, a socket, a
   * device, a directory): without its log the bridge can serve no run. A special file inside a
   * run directory quarantines that run instead.
   */
  special: string[];
  /** Pre-v0.8 state: top-level entries (files, `<RUN_ID>` directories, run directories unsigned). */
  legacy: string[];
  /** Run IDs sealed under another review-trust pin (none when no pin is given). */
  otherPin: string[];
  configs: LayoutConfigs;
  /** Interrupted run creations (`.tmp-run-*`), which startup removes. */
  interrupted: string[];
  listing: RunDirListing;
}

/** The run directories startup found, against the run index's (by directory name). */
export interface RunDirListing {
  /** Run directories the index lacks, which startup reads in full. */
  unindexed: string[];
  /** Runs the index holds whose directory is gone. */
  missing: string[];
}

/**
 * `names` (every run directory name in the data directory) against the index's directories,
 * which are marked found as they are met.
 */
export function runDirListing(names: Iterable<string>, indexed: RunDirSet): RunDirListing {
  const unindexed: string[] = [];
  for (const name of names) if (!indexed.mark(name)) unindexed.push(name);
  return { unindexed, missing: indexed.unmarked() };
}

/** At most this many entries are named in a refusal, so it stays one readable line. */
const LISTED = 10;

const listed = (names: string[]): string =>
  `${names.slice(0, LISTED).join(', ')}${names.length > LISTED ? `, ... (${names.length} in all)` : ''}`;

const byName = (a: Dirent, b: Dirent): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * Pre-v0.8 state in a file name: a snapshot, or raw JSONL events. The bridge's only top-level
 * JSONL files are its own `commit-disputed.jsonl` and `quarantined-runs.jsonl`.
 */
const isRunFile = (name: string): boolean =>
  name === SNAPSHOT_FILE || (name.endsWith('.jsonl') && name !== DISPUTED_FILE && name !== DRIFT_FILE);

/**
 * v0.8 never reinterprets pre-v0.8 state (SPEC Versioning 2): a `<RUN_ID>/run.json` directory,
 * raw JSONL events, or a run directory without a signed run-config.json stops startup with the
 * list of entries to archive. The bridge creates no symbolic link in the data directory and must
 * never follow one (a linked journal or commit log would be appended to wherever it points, a
 * linked directory would be read as a run it is not), so any link there, or in a run directory,
 * stops startup too, as does a commit log that is not a regular file (a FIFO, say: reading one
 * waits forever). Interrupted run creations (`.tmp-run-*`) never held acknowledged data and are
 * removed. Every signed config is authenticated here, once: a run sealed under another
 * review-trust pin stops startup (SPEC Errors 7), since serving it would mean trusting a pin the
 * operator no longer vouches for, or silently dropping the run. A config that fails
 * authentication is not a layout question: the store quarantines that run and serves the others.
 */
export async function checkLayout(
  dataDir: string,
  key: Buffer,
  trustPin: string,
  maxRuns: number = RUN_DIRECTORY_MAX,
  indexed?: RunDirSet,
): Promise<{ configs: LayoutConfigs; listing: RunDirListing }> {
  return settleLayout(dataDir, await scanLayout(dataDir, key, trustPin, maxRuns, indexed));
}

/**
 * `checkLayout` after its scan (which the startup reader may have made on its own thread,
 * startup-read.ts): interrupted creations removed, then the first refusal thrown.
 */
export async function settleLayout(
  dataDir: string,
  found: LayoutFindings,
): Promise<{ configs: LayoutConfigs; listing: RunDirListing }> {
  // rm removes a link itself, never what it points to.
  for (const name of found.interrupted) await rm(join(dataDir, name), { recursive: true, force: true });
  refuse(dataDir, found);
  return { configs: found.configs, listing: found.listing };
}

const isInterrupted = (name: string): boolean => name.startsWith('.tmp-run-');

/**
 * Whether a run-config.json's text carries a seal at all: one without (garbage, empty, pre-v0.8)
 * is a legacy layout that stops startup; one with a seal that fails quarantines only its run.
 */
export const isSignedConfigText = (text: string): boolean => /"mac"\s*:\s*"[0-9a-f]{64}"/.test(text);

/**
 * The read-only half of `checkLayout`: every finding, nothing removed, nothing followed (a linked
 * run directory is never entered). With `trustPin` null the pins are not compared. Run directories
 * named in `indexed` (the run index's, by directory name) are not entered.
 *
 * At most `maxRuns` run directories are read, the ceiling the store enforces on every creation
 * (storage/store.ts), so the bridge never writes a directory it then refuses to start from.
 * Interrupted creations are not counted: they hold nothing, startup removes them, and anyone
 * holding only the access token could once leave them behind. Other entries, which the bridge
 * never makes, are bounded by the same figure on their own.
 */
export async function scanLayout(
  dataDir: string,
  key: Buffer,
  trustPin: string | null,
  maxRuns: number = RUN_DIRECTORY_MAX,
  indexed: RunDirSet = new RunDirSet(),
  listing: DataDirListing = listDataDir(dataDir),
): Promise<LayoutFindings> {
  // A run directory the index names is marked found and not kept (a data directory holds up to
  // 100,000); every other entry is kept to be checked once the counts are known.
  const entries: DataDirListing['others'] = [];
  const runDirs: string[] = [];
  let indexedRunDirs = 0;
  let others = 0;
  for (let at = 0; at < listing.count * DIGEST_BYTES; at += DIGEST_BYTES) {
    if (indexed.markDigest(listing.runDirs, at)) {
      indexedRunDirs++;
      continue;
    }
    const name = runDirAt(listing.runDirs, at);
    entries.push({ name, kind: 'directory' });
    runDirs.push(name);
  }
  // The index names run directories only (listed above): none of these is in it.
  for (const entry of listing.others) {
    entries.push(entry);
    if (RUN_DIR_PATTERN.test(entry.name)) runDirs.push(entry.name);
    else if (!isInterrupted(entry.name) && entry.name !== RUN_INDEX_FILE) others++;
  }
  if (indexedRunDirs + runDirs.length > maxRuns) {
    throw new StartupError(
      `HARNESS_DATA_DIR ${dataDir} holds more than ${maxRuns} runs: archive it and start with a fresh data directory`,
    );
  }
  if (others > maxRuns) {
    throw new StartupError(
      `HARNESS_DATA_DIR ${dataDir} holds more than ${maxRuns} entries that are not runs: remove them, or archive the data directory and start with a fresh one`,
    );
  }
  const found: LayoutFindings = {
    links: [],
    special: [],
    legacy: [],
    otherPin: [],
    configs: new Map(),
    interrupted: [],
    listing: runDirListing(runDirs, indexed),
  };
  for (const entry of entries) {
    const name = entry.name;
    // Both were just taken by this startup (lease.ts), each replacing or refusing what was there.
    if (name === LEASE_FILE || name === MUTEX_FILE) continue;
    const path = join(dataDir, name);
    if (isInterrupted(name)) {
      found.interrupted.push(name);
    } else if (entry.kind === 'link') {
      found.links.push(name);
    } else if (
      (name === COMMIT_LOG_FILE || name === DISPUTED_FILE || name === DRIFT_FILE) &&
      entry.kind !== 'file'
    ) {
      found.special.push(name);
    } else if (entry.kind !== 'directory') {
      if (isRunFile(name) || RUN_DIR_PATTERN.test(name)) found.legacy.push(name);
    } else if (RUN_DIR_PATTERN.test(name)) {
      // A run the authenticated run index holds is checked when it is opened (storage/store.ts):
      // startup does not read every run's files.
      if (!indexed.has(name)) await checkRunDir(path, name, key, trustPin, found);
    } else if ((await readdir(path).catch((): string[] => [])).some(isRunFile)) {
      found.legacy.push(name);
    }
  }
  // Listed by name, in code-unit order, whatever order the directory was read in.
  for (const names of [found.links, found.special, found.legacy, found.otherPin, found.interrupted])
    names.sort();
  return found;
}

async function checkRunDir(
  path: string,
  name: string,
  key: Buffer,
  pin: string | null,
  found: LayoutFindings,
) {
  const entries = await readdir(path, { withFileTypes: true }).catch((): Dirent[] => []);
  const links = entries.filter((e) => e.isSymbolicLink());
  if (links.length > 0) {
    for (const link of links.sort(byName)) found.links.push(`${name}/${link.name}`);
    return;
  }
  let text: string | null;
  try {
    text = await readTextNoFollow(join(path, CONFIG_FILE));
  } catch (err) {
    // A FIFO, say, in its place: the run is quarantined (as a special journal or snapshot is
    // when the run is opened), the others are served.
    if (err instanceof NotRegularFileError) {
      found.configs.set(name, err);
      return;
    }
    text = null;
  }
  if (text === null || !isSignedConfigText(text)) {
    found.legacy.push(name);
    return;
  }
  let config: RunConfig;
  try {
    // Loaded for a run directory the index lacks: the startup reader's thread seldom needs it.
    const { parseConfig } = await import('./run-files.js');
    config = parseConfig(text, key);
  } catch (err) {
    found.configs.set(name, err as Error);
    return;
  }
  found.configs.set(name, config);
  // A config copied from another run directory is quarantined by the store instead.
  if (pin !== null && config.trustPin !== pin && runDirName(config.runId) === name)
    found.otherPin.push(config.runId);
}

function refuse(dataDir: string, found: LayoutFindings): void {
  if (found.links.length > 0) {
    throw new StartupError(
      `HARNESS_DATA_DIR ${dataDir} holds symbolic links (${listed(found.links)}), which the bridge never creates or follows: remove them, or archive the data directory and start with a fresh one`,
    );
  }
  if (found.special.length > 0) {
    throw new StartupError(
      `HARNESS_DATA_DIR ${dataDir} holds ${listed(found.special)} that is not a regular file (the bridge never creates one): remove it, or archive the data directory and start with a fresh one`,
    );
  }
  if (found.legacy.length > 0) {
    throw new StartupError(
      `HARNESS_DATA_DIR ${dataDir} holds a legacy pre-v0.8 layout (${listed(found.legacy)}): archive it and start with a fresh data directory`,
    );
  }
  if (found.otherPin.length > 0) {
    throw new StartupError(
      `HARNESS_REVIEW_TRUST_SHA256 differs from the review-trust pin sealed in ${found.otherPin.length} run(s) of HARNESS_DATA_DIR ${dataDir} (${listed(found.otherPin)}): restore the pin those runs were created under, or archive the data directory and start with a fresh one`,
    );
  }
}
