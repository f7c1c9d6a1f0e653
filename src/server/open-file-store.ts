import { join } from 'node:path';
import { checkLayout, type LayoutConfigs, type RunDirListing, settleLayout } from '../storage/layout.js';
import { type Lease, LeaseLostError } from '../storage/lease.js';
import { type IndexRead, RUN_INDEX_FILE, readIndexFile } from '../storage/run-index-file.js';
import type { StartupRead } from '../storage/startup-read.js';
import { RunStore, type StoreOptions } from '../storage/store.js';
import type { BridgeEnv } from './env.js';

/**
 * The file store under HARNESS_DATA_DIR: the run index, the layout check (legacy layouts, the
 * sealed pin), then the commit log's replay (recovery, under the mutex the caller holds).
 */
export async function openFileStore(
  env: BridgeEnv,
  lease: Lease,
  options: Omit<StoreOptions, 'dataDir' | 'configs' | 'listing' | 'runIndex' | 'fence' | 'onFailure'>,
  stopFor: (why: { cause: 'storage'; message: string }) => void,
  reading?: Promise<StartupRead>,
): Promise<RunStore> {
  let runIndex: IndexRead;
  let layout: { configs: LayoutConfigs; listing: RunDirListing };
  if (reading) {
    const { read, found } = await reading;
    runIndex = read;
    layout = await settleLayout(env.dataDir, found);
  } else {
    // The run index first: the layout check then reads only the run directories it lacks.
    runIndex = await readIndexFile(join(env.dataDir, RUN_INDEX_FILE), env.integrityKey, env.trustPin);
    layout = await checkLayout(
      env.dataDir,
      env.integrityKey,
      env.trustPin,
      options.maxRuns,
      runIndex.kind === 'read' ? runIndex.dirs : undefined,
    );
  }
  const { configs, listing } = layout;
  // Replaying the commit log is recovery: it runs under the mutex, so a crash in the middle
  // leaves the mutex behind for an operator to see rather than a half-recovered directory.
  return RunStore.open({
    ...options,
    dataDir: env.dataDir,
    configs,
    listing,
    runIndex,
    fence: lease.fence,
    // A lease lost fails the log too; the lease's own report (onLost) names the new holder.
    onFailure: (err) => {
      if (!(err instanceof LeaseLostError))
        stopFor({ cause: 'storage', message: `storage failed: ${err.message}` });
    },
  });
}
