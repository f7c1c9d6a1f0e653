import { join } from 'node:path';
import { RUN_ID_PATTERN } from '../contract/limits.js';
import { sha256Hex } from './mac.js';

/** SPEC "Run": the storage key is the SHA-256 of the exact run ID. */
export const RUN_DIR_PATTERN = /^run-[0-9a-f]{64}$/;
export const CONFIG_FILE = 'run-config.json';
export const SNAPSHOT_FILE = 'run.json';
export const JOURNAL_FILE = 'events.jsonl';
export const LEASE_FILE = 'bridge.lease';
export const MUTEX_FILE = 'recovery.mutex';
/** The commit log (storage/commit-log.ts) and the records its replay could not apply. */
export const COMMIT_LOG_FILE = 'commit.log';
export const DISPUTED_FILE = 'commit-disputed.jsonl';

export function isCanonicalRunId(id: string): boolean {
  return RUN_ID_PATTERN.test(id);
}

export function runDirName(runId: string): string {
  return `run-${sha256Hex(runId)}`;
}

export interface RunPaths {
  dir: string;
  config: string;
  snapshot: string;
  journal: string;
}

export function runPaths(dataDir: string, runId: string): RunPaths {
  const dir = join(dataDir, runDirName(runId));
  return {
    dir,
    config: join(dir, CONFIG_FILE),
    snapshot: join(dir, SNAPSHOT_FILE),
    journal: join(dir, JOURNAL_FILE),
  };
}
