import { ArtifactError, claimArtifact } from './artifact-root.js';

/**
 * What the bridge hashed just before it started the validators (CONTRACT 6): path -> SHA-256 hex
 * of every file its artifact check resolved (the claimed artifacts, the referenced documents and
 * the paths they name), null for a referenced document it found absent. The artifact root stays
 * agent-writable while the validators run, so a rule MUST decide only on bytes that hash to this
 * digest: otherwise an agent shows the validators other bytes than the ones hashed before and
 * after them (an A-B-A swap timed by atime) and a failing artifact completes the run.
 */
export type VerifiedDigests = Readonly<Record<string, string | null>>;

export function changedWhileChecked(relPath: string): string {
  return `${relPath} changed while the finish line was being checked`;
}

/**
 * The problem when the bytes a rule read at `relPath` (their digest, or null when it found no
 * file) are not the bytes the bridge verified there; null when they are, or when the bridge
 * verified nothing at that path (a validator input it does not hash keeps the rule's own read).
 */
export function unverifiedRead(
  verified: VerifiedDigests | undefined,
  relPath: string,
  sha256: string | null,
): string | null {
  if (verified === undefined || !Object.hasOwn(verified, relPath)) return null;
  return verified[relPath] === sha256 ? null : changedWhileChecked(relPath);
}

/**
 * The digest of one artifact (opened without links at any component and hashed from that one
 * descriptor), or the error a rule reports: a read the bridge did not verify is an error too.
 */
export async function verifiedDigest(
  realRoot: string,
  relPath: string,
  verified: VerifiedDigests | undefined,
  maxBytes?: number,
): Promise<string | Error> {
  const claim = await claimArtifact(realRoot, relPath, undefined, maxBytes).catch((err: Error) => err);
  if (claim instanceof Error) {
    const absent = claim instanceof ArtifactError && claim.message === `${relPath} does not exist`;
    const problem = absent ? unverifiedRead(verified, relPath, null) : null;
    return problem === null ? claim : new ArtifactError(problem);
  }
  const problem = unverifiedRead(verified, relPath, claim.sha256);
  return problem === null ? claim.sha256 : new ArtifactError(problem);
}
