import { lstat, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { RUN_DIRECTORY_MAX } from '../contract/index.js';
import { StartupError } from './lease.js';
import { CONFIG_FILE, LEASE_FILE, MUTEX_FILE, RUN_DIR_PATTERN } from './paths.js';

/**
 * v0.8 never reinterprets pre-v0.8 state: a `<RUN_ID>/run.json` directory, or a run directory
 * without a signed run-config.json, stops startup with the list of entries to archive.
 * Interrupted run creations (`.tmp-run-*`) never held acknowledged data and are removed.
 */
export async function checkLayout(dataDir: string): Promise<void> {
  const names = await readdir(dataDir);
  if (names.length > RUN_DIRECTORY_MAX) {
    throw new StartupError(`HARNESS_DATA_DIR holds more than ${RUN_DIRECTORY_MAX} entries`);
  }
  const legacy: string[] = [];
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
    const config = await readFile(join(path, CONFIG_FILE), 'utf8').catch(() => null);
    if (config === null || !/"mac"\s*:\s*"[0-9a-f]{64}"/.test(config)) legacy.push(name);
  }
  if (legacy.length > 0) {
    throw new StartupError(
      `HARNESS_DATA_DIR ${dataDir} holds a legacy pre-v0.8 layout (${legacy.slice(0, 10).join(', ')}${legacy.length > 10 ? ', ...' : ''}): archive it and start with a fresh data directory`,
    );
  }
}
