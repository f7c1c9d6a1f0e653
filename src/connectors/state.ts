import { lstatSync, mkdirSync, readFileSync, renameSync, type Stats, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runFileStem } from './names.js';

/**
 * What the connector remembers of a run between hook calls, in a small 0600 file per run under
 * `~/.harness/connector/`: the sessions seen, the node -> artifact map the bridge resolved for the
 * run, and the last fingerprint (size, mtime, inode) of each artifact and configuration file, so a
 * hook posts only what is new or changed. Losing the file costs nothing but repeats: artifact
 * events carry ids derived from the fingerprint, and the bridge answers a repeat as a duplicate.
 */
export interface RunMemory {
  sessions: string[];
  artifactMap: Record<string, string> | null;
  artifacts: Record<string, string>;
  configs: Record<string, string>;
}

export function memoryFile(home: string, runId: string): string {
  return join(home, '.harness', 'connector', `run-${runFileStem(runId)}.json`);
}

// The memory file is read and written synchronously: it is a few hundred bytes, a hook is a
// short-lived process with nothing else to do meanwhile, and `node:fs/promises` with its
// thread-pool round trips costs a hook more than the I/O itself (docs/performance.md, Hook).
export function loadMemory(file: string): RunMemory {
  const empty: RunMemory = { sessions: [], artifactMap: null, artifacts: {}, configs: {} };
  try {
    const m = JSON.parse(readFileSync(file, 'utf8')) as Partial<RunMemory>;
    return {
      sessions: Array.isArray(m.sessions) ? m.sessions.filter((s) => typeof s === 'string') : [],
      artifactMap: m.artifactMap && typeof m.artifactMap === 'object' ? m.artifactMap : null,
      artifacts: m.artifacts && typeof m.artifacts === 'object' ? m.artifacts : {},
      configs: m.configs && typeof m.configs === 'object' ? m.configs : {},
    };
  } catch {
    return empty;
  }
}

/** Replaced whole (temporary file, then rename): a reader sees the old or the new file, never half. */
export function saveMemory(file: string, memory: RunMemory): void {
  mkdirSync(join(file, '..'), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(memory), { mode: 0o600 });
  renameSync(tmp, file);
}

/**
 * A file's fingerprint, without following a link: `size:mtimeMs:ino` for a regular file,
 * `link`, `other` (a directory, a FIFO) or `absent`.
 */
export function fingerprint(path: string): string {
  // Synchronous: a hook takes a score of these per call, and each lstat is microseconds, less
  // than one trip through the thread pool.
  let s: Stats;
  try {
    s = lstatSync(path);
  } catch {
    return 'absent';
  }
  if (s.isSymbolicLink()) return 'link';
  if (!s.isFile()) return 'other';
  return `${s.size}:${s.mtimeMs}:${s.ino}`;
}
