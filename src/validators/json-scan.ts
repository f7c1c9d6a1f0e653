/**
 * Walks an untrusted JSON value and reports the JSON pointers where `match` holds for a key or a
 * string value. Bounded depth and node count: a hostile document cannot make the scan unbounded.
 */
export type ScanMatch = (key: string | null, value: unknown) => boolean;

export function scanJson(value: unknown, match: ScanMatch, maxNodes = 200_000): string[] {
  const hits: string[] = [];
  let budget = maxNodes;
  const visit = (v: unknown, key: string | null, pointer: string, depth: number) => {
    if (--budget < 0 || depth > 64) return;
    if (match(key, v)) hits.push(pointer === '' ? '/' : pointer);
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) visit(v[i], null, `${pointer}/${i}`, depth + 1);
    } else if (typeof v === 'object' && v !== null) {
      for (const [k, x] of Object.entries(v)) visit(x, k, `${pointer}/${k}`, depth + 1);
    }
  };
  visit(value, null, '', 0);
  return hits;
}

const TRUST_KEYS = /^(public_?key(pem)?|trust(store|ed_?keys|ed)?|keys?|key_?material|certificate)$/i;

/**
 * Self-declared reviewer trust: a review or packet that carries a key, a PEM block or trust
 * material of its own. Trust comes only from the committed, pinned store.
 */
export function selfDeclaredTrust(doc: unknown): string[] {
  return scanJson(
    doc,
    (key, v) => (key !== null && TRUST_KEYS.test(key)) || (typeof v === 'string' && v.includes('-----BEGIN')),
  );
}
