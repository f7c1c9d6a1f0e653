import type { Dirent } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { COMMIT_LOG_FILE, DISPUTED_FILE } from '../storage/commit-log-replay.js';
import { DRIFT_FILE } from '../storage/drift-quarantines.js';
import { scanLayout } from '../storage/layout.js';
import { StartupError } from '../storage/lease.js';
import { LEASE_FILE, MUTEX_FILE, RUN_DIR_PATTERN, runDirName } from '../storage/paths.js';
import { UsageError } from './env.js';

/**
 * What `harness verify` checks, from the same read-only layout scan bridge startup refuses on
 * (storage/layout.ts): a symbolic link in the data directory or in a run directory (never
 * followed: a linked run is not read at all), a commit log that is not a regular file (never
 * read: a FIFO would hang the check), pre-v0.8 state, and, when HARNESS_REVIEW_TRUST_SHA256
 * is set, a run sealed under another review-trust pin. Each is reported UNVERIFIABLE (exit 2),
 * as each is an environment the bridge refuses to start in.
 */
export interface Target {
  /** The run directory to authenticate, or null when it must not be read. */
  dir: string | null;
  name: string;
  /** Why the entry is not verified (dir null). */
  reason?: string;
}

export interface Layout {
  targets: Target[];
  /** Run IDs sealed under another pin than the one given. */
  otherPin: Set<string>;
  /**
   * A linked (or special) commit.log, commit-disputed.jsonl or quarantined-runs.jsonl: never read,
   * so no run's log records or recorded quarantines are checked.
   */
  logLinked: boolean;
}

const ARCHIVE = 'remove it, or archive the data directory and start with a fresh one';
export const LINK_REASON = `a symbolic link, which the bridge never creates or follows and refuses to start with: ${ARCHIVE}`;
export const SPECIAL_REASON = `not a regular file (a FIFO, say), which the bridge never creates or reads and refuses to start with: ${ARCHIVE}`;
export const LEGACY_REASON =
  'a legacy pre-v0.8 layout (raw JSONL events, a loose run.json, or a run directory without a signed run-config.json), which the bridge refuses to start with: archive it';
export const OTHER_PIN_REASON =
  'sealed under a review-trust pin other than HARNESS_REVIEW_TRUST_SHA256, which the bridge refuses to start with: restore the pin the run was created under, or archive the data directory';
export const LOG_LINK_REASON = `commit.log, commit-disputed.jsonl or quarantined-runs.jsonl is a symbolic link or a special file, never read: its records for this run cannot be checked`;

export async function layoutTargets(
  dataDir: string,
  ids: string[],
  key: Buffer,
  trustPin: string | null,
): Promise<Layout> {
  let entries: Dirent[];
  try {
    entries = await readdir(dataDir, { withFileTypes: true });
  } catch (err) {
    throw new UsageError(
      `cannot read the data directory ${dataDir} (${(err as NodeJS.ErrnoException).code})`,
    );
  }
  const found = await scanLayout(dataDir, key, trustPin).catch((err: Error) => {
    throw err instanceof StartupError ? new UsageError(err.message) : err;
  });
  // Links and a special commit log alike: entries never read.
  const links = new Map<string, string[]>();
  for (const link of [...found.links, ...found.special]) {
    const [top = link, inner] = link.split('/', 2);
    links.set(top, [...(links.get(top) ?? []), ...(inner === undefined ? [] : [inner])]);
  }
  const special = new Set(found.special);
  const legacy = new Set(found.legacy);
  const byName = new Map(entries.map((e) => [e.name, e]));
  const target = (name: string, label: string): Target | null => {
    const entry = byName.get(name);
    if (entry === undefined) return null;
    const linked = links.get(name);
    if (linked?.length === 0)
      return { dir: null, name: label, reason: special.has(name) ? SPECIAL_REASON : LINK_REASON };
    if (linked) {
      const names = linked.sort().join(', ');
      return {
        dir: null,
        name: label,
        reason: `symbolic links in the run directory (${names}): ${LINK_REASON}`,
      };
    }
    // A run directory without a signed config is authenticated: that says which file is wrong.
    if (RUN_DIR_PATTERN.test(name) && entry.isDirectory()) return { dir: name, name: label };
    return legacy.has(name) ? { dir: null, name: label, reason: LEGACY_REASON } : null;
  };
  const targets: Target[] =
    ids.length > 0
      ? ids.map(
          (id) =>
            target(runDirName(id), id) ?? {
              dir: null,
              name: id,
              reason: `no run with this ID in ${dataDir}`,
            },
        )
      : entries
          .filter((e) => e.name !== LEASE_FILE && e.name !== MUTEX_FILE && !e.name.startsWith('.tmp-run-'))
          .map((e) => target(e.name, e.name))
          .filter((t): t is Target => t !== null);
  return {
    targets,
    otherPin: new Set(found.otherPin),
    logLinked: links.has(COMMIT_LOG_FILE) || links.has(DISPUTED_FILE) || links.has(DRIFT_FILE),
  };
}
