/** Each byte's value as a lowercase hex digit, or -1. */
const HEX_VALUE = new Int8Array(256).fill(-1);
for (let d = 0; d < 16; d++) HEX_VALUE['0123456789abcdef'.charCodeAt(d)] = d;

/** Bytes of a SHA-256 digest or HMAC-SHA-256. */
export const DIGEST_BYTES = 32;

/**
 * Decodes the 64 lowercase hex digits at `bytes[from]` into `into[at, at + 32)`, without making a
 * string (the run index reads 100,000 of them at startup); false when they are not such digits,
 * `into` then partly written.
 */
export function digestFromHex(bytes: Uint8Array, from: number, into: Uint8Array, at: number): boolean {
  for (let i = 0; i < DIGEST_BYTES; i++) {
    const hi = HEX_VALUE[bytes[from + 2 * i]!]!;
    const lo = HEX_VALUE[bytes[from + 2 * i + 1]!]!;
    if (hi < 0 || lo < 0) return false;
    into[at + i] = (hi << 4) | lo;
  }
  return true;
}

/** As `digestFromHex`, from the characters of `text` at `from`. */
export function digestFromHexText(text: string, from: number, into: Uint8Array, at: number): boolean {
  for (let i = 0; i < DIGEST_BYTES; i++) {
    const a = text.charCodeAt(from + 2 * i);
    const b = text.charCodeAt(from + 2 * i + 1);
    const hi = a < 256 ? HEX_VALUE[a]! : -1;
    const lo = b < 256 ? HEX_VALUE[b]! : -1;
    if (hi < 0 || lo < 0) return false;
    into[at + i] = (hi << 4) | lo;
  }
  return true;
}
