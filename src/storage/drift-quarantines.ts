import { constants } from 'node:fs';
import { join } from 'node:path';
import { fsyncDir } from './atomic.js';
import { openNoFollow, readJsonLines } from './no-follow.js';

/**
 * `quarantined-runs.jsonl`: the completed runs a read found drifted (an artifact changed or gone,
 * a credential written into one, a document or the runtime changed), one `{runId, createdAt,
 * reason}` line per reason, appended and synced before that read answers. Startup quarantines each
 * named run again, so putting the bytes back and restarting the bridge does not lift a quarantine
 * an operator has seen (SPEC: drift quarantines the record). The lines are not authenticated: like
 * `commit-disputed.jsonl`'s, they can only ever quarantine. `createdAt` keeps a line from reaching
 * a later run created under the same ID once the quarantined run's directory was archived.
 */
export const DRIFT_FILE = 'quarantined-runs.jsonl';

export interface DriftQuarantine {
  runId: string;
  createdAt: string;
  reason: string;
}

const { O_APPEND, O_CREAT, O_WRONLY } = constants;

export async function appendDriftQuarantines(dataDir: string, lines: DriftQuarantine[]): Promise<void> {
  const handle = await openNoFollow(join(dataDir, DRIFT_FILE), O_WRONLY | O_APPEND | O_CREAT, 0o600);
  try {
    await handle.writeFile(lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
    await handle.datasync();
  } finally {
    await handle.close();
  }
  // The file may have just been created: its directory entry must survive a crash too.
  await fsyncDir(dataDir);
}

/** Every line of the file (none when it is absent). */
export function readDriftQuarantines(dataDir: string): Promise<DriftQuarantine[]> {
  return readJsonLines(join(dataDir, DRIFT_FILE), (d: Partial<Record<keyof DriftQuarantine, unknown>>) =>
    typeof d.runId === 'string' && typeof d.createdAt === 'string' && typeof d.reason === 'string'
      ? { runId: d.runId, createdAt: d.createdAt, reason: d.reason }
      : null,
  );
}
