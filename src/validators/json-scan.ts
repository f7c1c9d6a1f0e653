import { isCommitName } from './commit-name.js';

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

/**
 * The artifact paths an untrusted document names: every object carrying a string `path` and a
 * string `sha256` (the shape of an artifact reference and of an inventory entry), at any depth.
 * No depth or node budget that a hostile document could use to hide a reference: the walk is
 * iterative and the document's byte cap (DOCUMENT_MAX_BYTES) bounds it.
 */
export function artifactRefPaths(doc: unknown): string[] {
  const paths = new Set<string>();
  const stack: unknown[] = [doc];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null) continue;
    // One push per value: spreading a long array into push() would overflow the call stack.
    const values = Array.isArray(v) ? v : Object.values(v);
    for (const x of values) stack.push(x);
    const { path, sha256 } = v as { path?: unknown; sha256?: unknown };
    if (!Array.isArray(v) && typeof path === 'string' && typeof sha256 === 'string') paths.add(path);
  }
  return [...paths];
}

/**
 * The full commit names an untrusted document carries: every string value, at any depth, that
 * isCommitName accepts (only such a name ever reaches git). Iterative, bounded by the document's
 * byte cap like artifactRefPaths.
 */
export function commitNames(doc: unknown): string[] {
  const names = new Set<string>();
  const stack: unknown[] = [doc];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string' && isCommitName(v)) names.add(v);
    if (typeof v !== 'object' || v === null) continue;
    for (const x of Array.isArray(v) ? v : Object.values(v)) stack.push(x);
  }
  return [...names].sort();
}
