import canonicalize from 'canonicalize';

/**
 * RFC 8785 canonical JSON, byte-for-byte what the `canonicalize` package produces, with a fast
 * path for plain JSON data (what every journal record is): no `seen` set, one string built per
 * value, and a native regex instead of a per-character loop to rule out lone surrogates. Anything
 * the fast path does not handle identically (toJSON, non-finite numbers, surrogates, sparse
 * arrays, functions, bigints, deep or cyclic values) goes to `canonicalize` itself, so the output
 * and the errors are the package's in every case (test/canonical-json.test.ts checks this).
 */
export function canonicalJson(value: unknown): string | undefined {
  try {
    return encode(value, 0);
  } catch (err) {
    if (err !== BAIL) throw err;
  }
  return canonicalize(value);
}

const BAIL: unique symbol = Symbol('canonical-json-bail');
const SURROGATE = /[\uD800-\uDFFF]/;
const MAX_DEPTH = 128;

function encode(v: unknown, depth: number): string {
  switch (typeof v) {
    case 'string':
      if (SURROGATE.test(v)) throw BAIL;
      return JSON.stringify(v);
    case 'number':
      if (!Number.isFinite(v)) throw BAIL;
      return JSON.stringify(v);
    case 'boolean':
      return v ? 'true' : 'false';
    case 'object': {
      if (v === null) return 'null';
      if (depth >= MAX_DEPTH || typeof (v as { toJSON?: unknown }).toJSON === 'function') throw BAIL;
      if (Array.isArray(v)) {
        let out = '[';
        for (let i = 0; i < v.length; i++) {
          if (!(i in v)) throw BAIL;
          const x: unknown = v[i];
          if (i > 0) out += ',';
          out += x === undefined || typeof x === 'symbol' ? 'null' : encode(x, depth + 1);
        }
        return `${out}]`;
      }
      const o = v as Record<string, unknown>;
      const keys = Object.keys(o).sort();
      let out = '{';
      for (const k of keys) {
        const x = o[k];
        if (x === undefined || typeof x === 'symbol') continue;
        if (SURROGATE.test(k)) throw BAIL;
        if (out.length > 1) out += ',';
        out += `${JSON.stringify(k)}:${encode(x, depth + 1)}`;
      }
      return `${out}}`;
    }
    default:
      throw BAIL;
  }
}
