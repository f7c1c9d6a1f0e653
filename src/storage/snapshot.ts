import type { RunState } from '../contract/index.js';
import { SNAPSHOT_MAX_BYTES } from '../contract/index.js';
import { readSealed, SealCeilingError, SealError, writeSealed } from './sealed-file.js';

/**
 * `run.json`: the derived state, authenticated and bound to the journal prefix (count and head
 * MAC) it was derived from. It may trail the journal; it may never lead it.
 *
 * The schema (and MAC domain) changes whenever the meaning of the state changes: v2 records what
 * each artifact.written reported (`outcome`), which a v1 state, derived by older code, lacks.
 */
export interface Snapshot {
  schema: typeof SNAPSHOT_SCHEMA;
  runId: string;
  count: number;
  headMac: string;
  state: RunState;
}

export const SNAPSHOT_SCHEMA: 'harness.snapshot.v2' = 'harness.snapshot.v2';
/** Snapshots older code wrote: authenticated, then set aside so the journal is replayed in full. */
const SUPERSEDED = 'harness.snapshot.v1';

/**
 * Writes the snapshot unless it would exceed the ceiling `readSnapshot` enforces (the state keeps
 * every approval ever requested, so a long run can outgrow it). An oversize snapshot is skipped,
 * never written: the journal is authoritative, the run.json already on disk still binds a journal
 * prefix, and opening the run replays the rest. Resolves false when skipped.
 */
export async function writeSnapshot(
  path: string,
  key: Buffer,
  snap: Snapshot,
  maxBytes: number = SNAPSHOT_MAX_BYTES,
): Promise<boolean> {
  try {
    await writeSealed(path, key, SNAPSHOT_SCHEMA, snap, maxBytes);
    return true;
  } catch (err) {
    if (err instanceof SealCeilingError) return false;
    throw err;
  }
}

/** A snapshot as read: its binding to the journal, and its state unless that must be rebuilt. */
export interface SnapshotRead {
  runId: string;
  count: number;
  headMac: string;
  state: RunState | null;
}

/**
 * Reads and authenticates run.json. An authentic snapshot of a superseded schema comes back with
 * `state: null`: its state is not trusted to mean what this code means, so the run is rebuilt from
 * the journal (which is authoritative) and a current snapshot written later; its binding to the
 * journal (run, count, head MAC) is still checked, so it still witnesses a truncated journal. A
 * file that authenticates under neither schema is tampering, as before.
 */
export async function readSnapshot(
  path: string,
  key: Buffer,
  maxBytes: number = SNAPSHOT_MAX_BYTES,
): Promise<SnapshotRead> {
  let snap: Snapshot;
  try {
    snap = await readSealed<Snapshot>(path, key, SNAPSHOT_SCHEMA, maxBytes);
  } catch (err) {
    if (!(err instanceof SealError)) throw err;
    const old = await readSealed<Partial<Record<keyof Snapshot, unknown>>>(
      path,
      key,
      SUPERSEDED,
      maxBytes,
    ).catch(() => null);
    if (old?.schema !== SUPERSEDED) throw err;
    return { runId: String(old.runId), count: Number(old.count), headMac: String(old.headMac), state: null };
  }
  if (snap.schema !== SNAPSHOT_SCHEMA) throw new SealError(`${SNAPSHOT_SCHEMA} file names another schema`);
  return snap;
}
