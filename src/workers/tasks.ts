import { createHash } from 'node:crypto';
import { readSync } from 'node:fs';

/**
 * Code that runs inside a worker thread. Results are plain objects: errors crossing the thread
 * boundary lose their fields (structured clone), so failures come back as `{ ok: false, ... }`.
 */
export type HashResult =
  | { ok: true; sha256: string; bytes: number; leaked: boolean }
  | { ok: false; code: string; message: string };

const CHUNK = 1024 * 1024;

/**
 * Hashes an already-opened descriptor from offset 0. Descriptors are process-wide, so the main
 * thread opens (with its no-link checks) and the worker only reads what was opened.
 */
export function hashDescriptor(fd: number, needles: readonly string[] = []): HashResult {
  const hash = createHash('sha256');
  const patterns = needles.filter((n) => n !== '').map((n) => Buffer.from(n));
  // Bytes kept from the previous chunk so a credential split across two reads is still found.
  const overlap = Math.max(0, ...patterns.map((p) => p.length - 1));
  const buf = Buffer.allocUnsafe(CHUNK + overlap);
  let carried = 0;
  let leaked = false;
  let position = 0;
  try {
    for (;;) {
      const n = readSync(fd, buf, carried, CHUNK, position);
      if (n === 0) break;
      hash.update(buf.subarray(carried, carried + n));
      position += n;
      const window = buf.subarray(0, carried + n);
      if (!leaked && patterns.some((p) => window.indexOf(p) >= 0)) leaked = true;
      carried = Math.min(overlap, window.length);
      window.copy(buf, 0, window.length - carried);
    }
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return { ok: false, code: e.code ?? 'EIO', message: e.message };
  }
  return { ok: true, sha256: hash.digest('hex'), bytes: position, leaked };
}

export interface WorkerTask {
  op: 'hash';
  fds: number[];
  /** Byte strings that must not occur in the files (credential values on completed-run reads). */
  needles?: string[];
}

/** Piscina entry point: one task may carry many small descriptors (batched) or one large one. */
export default function run(task: WorkerTask): HashResult[] {
  switch (task.op) {
    case 'hash':
      return task.fds.map((fd) => hashDescriptor(fd, task.needles));
    default:
      return [];
  }
}
