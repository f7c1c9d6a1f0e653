import { createHash, hash, timingSafeEqual } from 'node:crypto';
import { canonicalJson } from './canonical.js';

/**
 * Every MAC covers canonical (RFC 8785) bytes behind a prefix naming the record type, so a MAC
 * made for one record type can never be replayed as another (DSSE-style domain separation).
 */
export type MacDomain =
  | 'harness.journal.v1'
  | 'harness.run-config.v1'
  | 'harness.snapshot.v1'
  | 'harness.snapshot.v2'
  | 'harness.human-token.v1'
  | 'harness.pg-head.v1';

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
  return hmacHex(key, `${domain}\0${canonical}`);
}

/**
 * HMAC-SHA-256 (RFC 2104) as two one-shot `crypto.hash` calls over the key's cached pads: byte for
 * byte `createHmac`'s answer (test/storage/mac.test.ts), without the native Hmac object per call, which
 * costs a sealing bridge about 5% of its main-thread time per event (docs/performance.md).
 */
function hmacHex(key: Buffer, text: string): string {
  const p = padsOf(key);
  const need = 64 + 3 * text.length;
  if (scratch.length < need) scratch = Buffer.allocUnsafe(Math.max(need, 2 * scratch.length));
  p.inner.copy(scratch, 0);
  const n = scratch.write(text, 64, 'utf8');
  // The inner digest travels as hex: a new Buffer from `hash` costs more than the decode.
  p.outer.write(hash('sha256', scratch.subarray(0, 64 + n), 'hex'), 64, 'hex');
  return hash('sha256', p.outer, 'hex');
}

/** A key's inner pad, and its outer pad with room for the inner digest after it. */
interface Pads {
  key: Buffer;
  inner: Buffer;
  outer: Buffer;
}
let lastPads: Pads | null = null;
let scratch = Buffer.allocUnsafe(4096);

function padsOf(key: Buffer): Pads {
  // One integrity key per process in practice; a copy is kept and compared, so a key buffer
  // changed in place can never be MAC'd with the pads of its old bytes.
  if (lastPads?.key.equals(key)) return lastPads;
  const k = key.length > 64 ? createHash('sha256').update(key).digest() : key;
  const inner = Buffer.alloc(64, 0x36);
  const outer = Buffer.alloc(96, 0x5c);
  for (let i = 0; i < k.length; i++) {
    inner[i]! ^= k[i]!;
    outer[i]! ^= k[i]!;
  }
  lastPads = { key: Buffer.from(key), inner, outer };
  return lastPads;
}

/** Compares two hex MACs in constant time over equal-length digests. */
export function macEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === 32 && y.length === 32 && timingSafeEqual(x, y);
}

/** A keyed digest of a secret, so a run directory never holds anything that tests a guess offline. */
export function secretDigest(key: Buffer, secret: string): string {
  return hmacHex(key, `harness.human-token.v1\0${secret}`);
}

export function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

export const GENESIS = '0'.repeat(64);
