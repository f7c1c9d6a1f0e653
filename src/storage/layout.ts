import { lstat, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { RunConfig } from '../contract/index.js';
import { RUN_DIRECTORY_MAX } from '../contract/index.js';
import { StartupError } from './lease.js';
import { CONFIG_FILE, LEASE_FILE, MUTEX_FILE, RUN_DIR_PATTERN, runDirName } from './paths.js';
import { parseConfig } from './run-files.js';

/** Each run directory's config as startup authenticated it, or why it failed (the run is quarantined). */
export type LayoutConfigs = Map<string, RunConfig | Error>;

/** At most this many entries are named in a refusal, so it stays one readable line. */
const LISTED = 10;

const listed = (names: string[]): string =>
  `${names.slice(0, LISTED).join(', ')}${names.length > LISTED ? `, ... (${names.length} in all)` : ''}`;

/**
 * v0.8 never reinterprets pre-v0.8 state: a `<RUN_ID>/run.json` directory, or a run directory
 * without a signed run-config.json, stops startup with the list of entries to archive.
 * Interrupted run creations (`.tmp-run-*`) never held acknowledged data and are removed.
 * Every signed config is authenticated here, once: a run sealed under another review-trust pin
 * stops startup too (SPEC Errors 7), since serving it would mean trusting a pin the operator no
 * longer vouches for, or silently dropping the run. A config that fails authentication is not a
 * layout question: the store quarantines that run with the reason and serves the others.
 */
export async function checkLayout(dataDir: string, key: Buffer, trustPin: string): Promise<LayoutConfigs> {
  const names = (await readdir(dataDir)).sort();
  if (names.length > RUN_DIRECTORY_MAX) {
    throw new StartupError(`HARNESS_DATA_DIR holds more than ${RUN_DIRECTORY_MAX} entries`);
  }
  const configs: LayoutConfigs = new Map();
  const legacy: string[] = [];
  const otherPin: string[] = [];
  for (const name of names) {
    if (name === LEASE_FILE || name === MUTEX_FILE) continue;
    const path = join(dataDir, name);
    if (name.startsWith('.tmp-run-')) {
      await rm(path, { recursive: true, force: true });
      continue;
    }
    const st = await lstat(path);
    if (!st.isDirectory()) continue;
    if (!RUN_DIR_PATTERN.test(name)) {
      const names2: string[] = await readdir(path).catch(() => []);
      if (names2.includes('run.json') || names2.includes('events.jsonl')) legacy.push(name);
      continue;
    }
    const text = await readFile(join(path, CONFIG_FILE), 'utf8').catch(() => null);
    if (text === null || !/"mac"\s*:\s*"[0-9a-f]{64}"/.test(text)) {
      legacy.push(name);
      continue;
    }
    let config: RunConfig;
    try {
      config = parseConfig(text, key);
    } catch (err) {
      configs.set(name, err as Error);
      continue;
    }
    configs.set(name, config);
    // A config copied from another run directory is quarantined by the store instead.
    if (config.trustPin !== trustPin && runDirName(config.runId) === name) otherPin.push(config.runId);
  }
  if (legacy.length > 0) {
    throw new StartupError(
      `HARNESS_DATA_DIR ${dataDir} holds a legacy pre-v0.8 layout (${listed(legacy)}): archive it and start with a fresh data directory`,
    );
  }
  if (otherPin.length > 0) {
    throw new StartupError(
      `HARNESS_REVIEW_TRUST_SHA256 differs from the review-trust pin sealed in ${otherPin.length} run(s) of HARNESS_DATA_DIR ${dataDir} (${listed(otherPin)}): restore the pin those runs were created under, or archive the data directory and start with a fresh one`,
    );
  }
  return configs;
}
