import { closeSync, openSync, readSync } from 'node:fs';

/**
 * Names a hook call makes up without node:crypto, which costs half a bare Node start to load and
 * would be the largest part of a hook that posts one event (docs/performance.md, "Hook").
 */

/**
 * A run ID (RUN_ID_PATTERN, checked by the caller) as part of a file name, one name per ID even on
 * a case-insensitive file system: the ID in lower case, then, if it had capitals, `+` (outside the
 * ID alphabet) and a hex mask of their positions. At most 128 + 33 characters.
 */
export function runFileStem(runId: string): string {
  const lower = runId.toLowerCase();
  if (lower === runId) return runId;
  let mask = 0n;
  for (let i = 0; i < runId.length; i++) if (runId[i] !== lower[i]) mask |= 1n << BigInt(i);
  return `${lower}+${mask.toString(16)}`;
}

/** A fresh event ID: the runtime's name and 128 bits from the kernel's random source. */
export async function freshEventId(prefix: string): Promise<string> {
  let bytes: Buffer;
  try {
    bytes = Buffer.alloc(16);
    const fd = openSync('/dev/urandom', 'r');
    try {
      if (readSync(fd, bytes, 0, 16, null) !== 16) throw new Error('short read');
    } finally {
      closeSync(fd);
    }
  } catch {
    bytes = (await import('node:crypto')).randomBytes(16);
  }
  return `${prefix}-${bytes.toString('hex')}`;
}
