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
 * The pins of the review-trust store the review gate reads (`trustStorePath`): as it is in the
 * worktree and as committed at HEAD, each null when that store is absent. Nothing here ever
 * enrols a key.
 */
export async function trustStorePins(
  repoRoot: string,
): Promise<{ path: string; live: string | null; committed: string | null }> {
  const path = await trustStorePath(repoRoot);
  const digest = (text: string | null, where: string): string | null => {
    if (text === null) return null;
    try {
      return trustStoreDigest(text);
    } catch {
      throw new StartupError(`HARNESS_REPO_ROOT ${where}${path} is not valid JSON`);
    }
  };
  const live = digest(await readFile(join(repoRoot, path), 'utf8').catch(() => null), '');
  return { path, live, committed: live === null ? null : digest(await committed(repoRoot, path), 'HEAD:') };
}

const HOW = '`harness review pin` prints the pin of the store as committed, once it is reviewed';

/**
 * The pin must match both the live store in the worktree and the store at the reviewed commit
 * (HEAD): an uncommitted edit to the trust store, or a pin chosen to match one but not the other,
 * stops startup. The store is the one file the review gate reads (SPEC "the exact committed path
 * derived from the same-worktree runtime pack"), never another that happens to exist: a bridge
 * that started on one store while the gate looked for another would block every commissioned
 * completion.
 */
export async function checkTrustPin(repoRoot: string, pin: string): Promise<string> {
  const { path, live, committed } = await trustStorePins(repoRoot);
  if (live === null) throw new StartupError(`HARNESS_REPO_ROOT holds no review-trust store ${path}`);
  if (live !== pin) {
    throw new StartupError(
      `HARNESS_REVIEW_TRUST_SHA256 does not match the live trust store ${path} (${HOW})`,
    );
  }
  if (committed === null) throw new StartupError(`HARNESS_REPO_ROOT has no committed ${path} at HEAD`);
  if (committed !== pin) {
    throw new StartupError(
      `HARNESS_REVIEW_TRUST_SHA256 does not match the committed trust store ${path} at HEAD (${HOW})`,
    );
  }
  return path;
}
