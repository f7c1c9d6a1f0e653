import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { LEASE_FILE, MUTEX_FILE } from '../../src/storage/paths.js';
import type { TestBridge, TestEnv } from './bridge.js';

/**
 * The data directory as a crash would leave it right now (no checkpoint, no clean close): a copy
 * without the lease and mutex of the bridge still running on the original, removed in teardown.
 */
export async function crashImage(t: Test, b: TestBridge): Promise<TestEnv> {
  const dir = await mkdtemp(join(tmpdir(), 'harness-crash-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const dataDir = join(dir, 'data');
  await cp(b.t.dataDir, dataDir, {
    recursive: true,
    filter: (src) => !src.endsWith(LEASE_FILE) && !src.endsWith(MUTEX_FILE),
  });
  return { ...b.t, dir, dataDir, env: { ...b.t.env, HARNESS_DATA_DIR: dataDir } };
}
