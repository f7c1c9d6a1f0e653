import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { Test } from 'tap';
import { LEASE_FILE, MUTEX_FILE } from '../../src/storage/paths.js';
import type { TestBridge, TestEnv } from './bridge.js';

/**
 * The data directory as a crash would leave it right now (no checkpoint, no clean close): a copy
 * without the lease and mutex of the bridge still running on the original, removed in teardown.
 *
 * Nor does it copy what the running bridge is replacing at that moment: an atomic replace's temp
 * file (`.run.json.<hex>.tmp`, renamed into place) or a run directory under a `.tmp-` name. Such a
 * file can vanish between the copy's listing and its read (a snapshot written behind the test's
 * last request failed the copy with ENOENT), and leaving it out is a crash image all the same: one
 * from just before it was made or just after it was renamed, which startup handles either way.
 */
export async function crashImage(t: Test, b: TestBridge): Promise<TestEnv> {
  const dir = await mkdtemp(join(tmpdir(), 'harness-crash-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const dataDir = join(dir, 'data');
  await cp(b.t.dataDir, dataDir, {
    recursive: true,
    filter: (src) => !src.endsWith(LEASE_FILE) && !src.endsWith(MUTEX_FILE) && !inFlight(basename(src)),
  });
  return { ...b.t, dir, dataDir, env: { ...b.t.env, HARNESS_DATA_DIR: dataDir } };
}

const inFlight = (name: string): boolean => name.startsWith('.tmp-') || /^\..+\.[0-9a-f]+\.tmp$/.test(name);
