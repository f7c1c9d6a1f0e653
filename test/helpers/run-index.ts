import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { RUN_INDEX_FILE } from '../../src/storage/run-index-file.js';

/**
 * The data directory as a bridge without the run index left it: the next start reads every run
 * directory in full (storage/run-attribution.ts), which is what a test of startup's attribution
 * and layout rules exercises. With the index, the same damage is found when the run is opened.
 */
export async function dropRunIndex(dataDir: string): Promise<void> {
  await rm(join(dataDir, RUN_INDEX_FILE), { force: true });
}
