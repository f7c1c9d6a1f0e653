import { atomicWrite } from './atomic.js';
import { type MacDomain, mac, macEqual } from './mac.js';
import { readTextNoFollow } from './no-follow.js';

/** A JSON document authenticated by an HMAC over its canonical form (run-config.json, run.json). */
export class SealError extends Error {
  override readonly name = 'SealError';
}

/** A sealed file that would be larger than its ceiling; nothing was written. */
export class SealCeilingError extends SealError {}

/**
 * Writes a sealed file, refusing one larger than the ceiling its reader enforces: a file written
 * over it would fail its own read and quarantine the run it belongs to.
 */
export async function writeSealed(
  path: string,
  key: Buffer,
  domain: MacDomain,
  body: object,
  maxBytes: number,
): Promise<void> {
  await atomicWrite(path, sealText(key, domain, body, maxBytes));
}

/** A sealed document's text, as `writeSealed` writes it (the PostgreSQL store keeps it in a row). */
export function sealText(key: Buffer, domain: MacDomain, body: object, maxBytes: number): string {
  const text = `${JSON.stringify({ ...body, mac: mac(key, domain, body) })}\n`;
  if (Buffer.byteLength(text) > maxBytes)
    throw new SealCeilingError(`${domain} file would exceed its ceiling`);
  return text;
}

/** Reads and authenticates a sealed file; `unsigned` tells a pre-v0.8 file from a tampered one. */
export async function readSealed<T extends object>(
  path: string,
  key: Buffer,
  domain: MacDomain,
  maxBytes: number,
): Promise<T> {
  return parseSealed<T>(await readTextNoFollow(path), key, domain, maxBytes);
}

/** Authenticates the text of a sealed file already read (startup reads each config once). */
export function parseSealed<T extends object>(
  text: string,
  key: Buffer,
  domain: MacDomain,
  maxBytes: number,
): T {
  if (Buffer.byteLength(text) > maxBytes) throw new SealError(`${domain} file exceeds its ceiling`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new SealError(`${domain} file is not JSON`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new SealError(`${domain} file is not an object`);
  }
  const { mac: sealed, ...body } = parsed as Record<string, unknown>;
  if (typeof sealed !== 'string') throw new SealError(`${domain} file is unsigned`);
  if (!macEqual(sealed, mac(key, domain, body))) throw new SealError(`${domain} file fails authentication`);
  return body as T;
}
