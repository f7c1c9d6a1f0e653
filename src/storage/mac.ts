import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { canonicalJson } from './canonical.js';

/**
 * Every MAC covers canonical (RFC 8785) bytes behind a prefix naming the record type, so a MAC
 * made for one record type can never be replayed as another (DSSE-style domain separation).
 */
export type MacDomain =
  | 'harness.journal.v1'
  | 'harness.run-config.v1'
  | 'harness.snapshot.v1'
  | 'harness.human-token.v1';

export function canonicalBytes(value: unknown): string {
  const text = canonicalJson(value);
  if (text === undefined) throw new Error('value has no canonical JSON form');
  return text;
}

export function mac(key: Buffer, domain: MacDomain, value: unknown): string {
  return macText(key, domain, canonicalBytes(value));
}

/** The MAC of text that is already the canonical form of the value (see `mac`). */
export function macText(key: Buffer, domain: MacDomain, canonical: string): string {
  return createHmac('sha256', key).update(`${domain}\0${canonical}`).digest('hex');
}

/** Compares two hex MACs in constant time over equal-length digests. */
export function macEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === 32 && y.length === 32 && timingSafeEqual(x, y);
}

/** A keyed digest of a secret, so a run directory never holds anything that tests a guess offline. */
export function secretDigest(key: Buffer, secret: string): string {
  return createHmac('sha256', key).update('harness.human-token.v1\0').update(secret).digest('hex');
}

export function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

export const GENESIS = '0'.repeat(64);
