import { createHash } from 'node:crypto';
import { readSync } from 'node:fs';

/**
 * Code that runs inside a worker thread. Results are plain objects: errors crossing the thread
 * boundary lose their fields (structured clone), so failures come back as `{ ok: false, ... }`.
 */
export type HashResult =
  | { ok: true; sha256: string; bytes: number }
  | { ok: false; code: string; message: string };

const CHUNK = 1024 * 1024;

/**
 * Hashes an already-opened descriptor from offset 0. Descriptors are process-wide, so the main
 * thread opens (with its no-link checks) and the worker only reads what was opened.
 */
export function hashDescriptor(fd: number): HashResult {
  const hash = createHash('sha256');
  const buf = Buffer.allocUnsafe(CHUNK);
  let position = 0;
  try {
    for (;;) {
      const n = readSync(fd, buf, 0, CHUNK, position);
      if (n === 0) break;
      hash.update(buf.subarray(0, n));
      position += n;
    }
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return { ok: false, code: e.code ?? 'EIO', message: e.message };
  }
  return { ok: true, sha256: hash.digest('hex'), bytes: position };
}

export interface WorkerTask {
  op: 'hash';
  fds: number[];
}

/** Piscina entry point: one task may carry many small descriptors (batched) or one large one. */
export default function run(task: WorkerTask): HashResult[] {
  switch (task.op) {
    case 'hash':
      return task.fds.map(hashDescriptor);
    default:
      return [];
  }
}
