import canonicalize from 'canonicalize';

/**
 * RFC 8785 canonical JSON, byte-for-byte what the `canonicalize` package produces, with a fast
 * path for plain JSON data (what every journal record is): a copy of the value with every
 * object's keys inserted in sorted order, serialized by the native JSON.stringify in one call.
 * Anything the fast path cannot reproduce exactly goes to `canonicalize` itself, so the output and
 * the errors are the package's in every case (test/storage/canonical-json.test.ts checks this): toJSON,
 * non-finite numbers, sparse arrays, functions, bigints, deep or cyclic values, keys starting
 * with a digit (V8 orders integer-like keys numerically, not by code unit), `__proto__`, and any
 * output holding a `\u` escape (lone surrogates and control characters).
 */
export function canonicalJson(value: unknown): string | undefined {
  try {
    const text = JSON.stringify(sortedCopy(value, 0));
    if (!text.includes('\\u')) return text;
  } catch (err) {
    if (err !== BAIL) throw err;
  }
  return canonicalize(value);
}

const BAIL: unique symbol = Symbol('canonical-json-bail');
const MAX_DEPTH = 128;

function sortedCopy(v: unknown, depth: number): unknown {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return v;
    case 'number':
      if (!Number.isFinite(v)) throw BAIL;
      return v;
    case 'object': {
      if (v === null) return null;
      if (depth >= MAX_DEPTH || typeof (v as { toJSON?: unknown }).toJSON === 'function') throw BAIL;
      if (Array.isArray(v)) {
        const out: unknown[] = new Array(v.length);
        for (let i = 0; i < v.length; i++) {
          if (!(i in v)) throw BAIL;
          const x: unknown = v[i];
          out[i] = x === undefined || typeof x === 'symbol' ? null : sortedCopy(x, depth + 1);
        }
        return out;
      }
      const o = v as Record<string, unknown>;
      const keys = Object.keys(o).sort();
      const out: Record<string, unknown> = {};
      for (const k of keys) {
        const c = k.charCodeAt(0);
        if ((c >= 0x30 && c <= 0x39) || k === '__proto__') throw BAIL;
        const x = o[k];
        if (x === undefined || typeof x === 'symbol') continue;
        out[k] = sortedCopy(x, depth + 1);
      }
      return out;
    }
    default:
      throw BAIL;
  }
}
