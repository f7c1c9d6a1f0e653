import type { RunState } from '../contract/index.js';
import { SNAPSHOT_MAX_BYTES } from '../contract/index.js';
import { readSealed, writeSealed } from './sealed-file.js';

/**
 * `run.json`: the derived state, authenticated and bound to the journal prefix (count and head
 * MAC) it was derived from. It may trail the journal; it may never lead it.
 */
export interface Snapshot {
  schema: 'harness.snapshot.v1';
  runId: string;
  count: number;
  headMac: string;
  state: RunState;
}

export function writeSnapshot(path: string, key: Buffer, snap: Snapshot): Promise<void> {
  return writeSealed(path, key, 'harness.snapshot.v1', snap);
}

export function readSnapshot(path: string, key: Buffer): Promise<Snapshot> {
  return readSealed<Snapshot>(path, key, 'harness.snapshot.v1', SNAPSHOT_MAX_BYTES);
}
