import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { StartupError } from '../storage/lease.js';
import { canonicalBytes, sha256Hex } from '../storage/mac.js';
import { showCommitted } from '../validators/git.js';
import { trustStorePath } from '../validators/trust-store.js';

/** The pin is the SHA-256 of the store's canonical JSON (RFC 8785). */
export function trustStoreDigest(text: string): string {
  return sha256Hex(canonicalBytes(JSON.parse(text)));
}

/** Through the validators' isolated git: this runs in the bridge process, beside its credentials. */
async function committed(repoRoot: string, path: string): Promise<string | null> {
  return (await showCommitted(repoRoot, path))?.toString('utf8') ?? null;
}

/**
 * The pin must match both the live store in the worktree and the store at the reviewed commit
 * (HEAD): an uncommitted edit to the trust store, or a pin chosen to match one but not the other,
 * stops startup. The store is the one file the review gate reads (`trustStorePath`, SPEC "the
 * exact committed path derived from the same-worktree runtime pack"), never another that happens
 * to exist: a bridge that started on one store while the gate looked for another would block every
 * commissioned completion. Nothing here ever enrols a key.
 */
export async function checkTrustPin(repoRoot: string, pin: string): Promise<string> {
  const path = await trustStorePath(repoRoot);
  const live = await readFile(join(repoRoot, path), 'utf8').catch(() => null);
  if (live === null) throw new StartupError(`HARNESS_REPO_ROOT holds no review-trust store ${path}`);
  let liveDigest: string;
  try {
    liveDigest = trustStoreDigest(live);
  } catch {
    throw new StartupError(`HARNESS_REPO_ROOT ${path} is not valid JSON`);
  }
  if (liveDigest !== pin) {
    throw new StartupError(`HARNESS_REVIEW_TRUST_SHA256 does not match the live trust store ${path}`);
  }
  const text = await committed(repoRoot, path);
  if (text === null) throw new StartupError(`HARNESS_REPO_ROOT has no committed ${path} at HEAD`);
  if (trustStoreDigest(text) !== pin) {
    throw new StartupError(
      `HARNESS_REVIEW_TRUST_SHA256 does not match the committed trust store ${path} at HEAD`,
    );
  }
  return path;
}
