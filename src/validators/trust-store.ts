import { createHash } from 'node:crypto';
import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  PACK_TRUST_STORE_PATH,
  REVIEW_TRUST_SCHEMA_ID,
  type ReviewTrust,
  TRUST_STORE_PATH,
} from '../contract/artifacts/index.js';
import { schemaProblems } from './documents.js';
import { canonicalBytes } from './evidence.js';
import { showCommitted } from './git.js';
import { ed25519PublicKey } from './signature.js';

/**
 * The pinned review trust store, parsed once into read-only material. Threats: an agent editing the
 * working copy (we read only the committed tree at HEAD), an agent committing a new store (its
 * canonical SHA-256 must equal the operator's pin), and a review naming a key that is not there
 * (lookups are by exact id; an unknown id is an error, never a fallback to another key).
 */
export interface TrustedKey {
  readonly keyId: string;
  readonly status: 'active' | 'revoked';
  readonly publicKeyPem: string;
  readonly allowedActorIds: ReadonlySet<string>;
}
export interface TrustStore {
  readonly path: string;
  readonly keys: ReadonlyMap<string, TrustedKey>;
}

/**
 * SPEC "Review trust store path": the commissioned-target path when the repository has a
 * `.harness-pack`, else the harness repository's path. The only resolution: startup's pin check,
 * the review gate and the verdict cache key all read this one file, never a fallback to the other.
 */
export async function trustStorePath(repoRoot: string): Promise<string> {
  try {
    await lstat(join(repoRoot, '.harness-pack'));
    return PACK_TRUST_STORE_PATH;
  } catch {
    return TRUST_STORE_PATH;
  }
}

export function trustPinOf(store: unknown): string {
  return createHash('sha256').update(canonicalBytes(store)).digest('hex');
}

export async function loadTrustStore(
  repoRoot: string,
  pin: string,
): Promise<{ ok: true; store: TrustStore } | { ok: false; problems: string[] }> {
  const path = await trustStorePath(repoRoot);
  const bytes = await showCommitted(repoRoot, path);
  if (bytes === null) return { ok: false, problems: [`trust store ${path} is not committed at HEAD`] };
  let doc: unknown;
  try {
    doc = JSON.parse(bytes.toString('utf8'));
  } catch {
    return { ok: false, problems: [`trust store ${path} is not valid JSON`] };
  }
  const shape = schemaProblems(path, REVIEW_TRUST_SCHEMA_ID, doc);
  if (shape.length > 0) return { ok: false, problems: shape };
  if (!/^[0-9a-f]{64}$/.test(pin) || trustPinOf(doc) !== pin) {
    return { ok: false, problems: [`trust store ${path} does not match the sealed review-trust pin`] };
  }
  const { keys, problems } = trustedKeys(path, doc as ReviewTrust);
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, store: Object.freeze({ path, keys }) };
}

/**
 * The keys of a store that validates as harness.review-trust.v1, and what the schema cannot say: a
 * key listed twice, a PEM that is not an Ed25519 public key. `harness review enroll` refuses to
 * write a store with any of these problems.
 */
export function trustedKeys(
  path: string,
  doc: ReviewTrust,
): { keys: Map<string, TrustedKey>; problems: string[] } {
  const keys = new Map<string, TrustedKey>();
  const problems: string[] = [];
  for (const k of doc.keys) {
    if (keys.has(k.keyId)) problems.push(`trust store ${path} lists key ${k.keyId} twice`);
    try {
      ed25519PublicKey(k.publicKeyPem);
    } catch {
      problems.push(`trust store ${path} key ${k.keyId} is not an Ed25519 public key`);
    }
    keys.set(k.keyId, Object.freeze({ ...k, allowedActorIds: new Set(k.allowedActorIds) }));
  }
  return { keys, problems };
}
