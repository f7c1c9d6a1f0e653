import { randomBytes } from 'node:crypto';
import { constants, lstat, mkdir, open, rename, unlink } from 'node:fs/promises';
import { sep } from 'node:path';
import type { InventoryEntryT, Review, RosterT } from '../contract/artifacts/index.js';
import type { NodeId } from '../contract/index.js';
import { artifactPathProblems } from '../contract/index.js';
import { fsyncDir } from '../storage/atomic.js';
import { claimArtifact } from '../validators/artifact-root.js';
import {
  type EvidenceBundle,
  evidenceBundle,
  evidenceBundleDigest,
  reviewSigningBytes,
} from '../validators/evidence.js';
import { buildInventory } from '../validators/inventory.js';
import { signEd25519 } from '../validators/signature.js';
import { UsageError } from './env.js';

/**
 * The evidence-writing side of the finish line, shared by `harness proof run`, `harness review
 * sign` and `harness run create --print-evidence-bundle`. It uses the validators' own
 * evidenceBundle/inventory/signing-bytes functions, so what the tools produce is exactly what the
 * gate checks.
 */

/**
 * Writes `relPath` under the real artifact root atomically (temp file + fsync + rename). Each
 * directory component is created or checked without following links, and the temp file is created
 * with O_EXCL|O_NOFOLLOW: a planted link cannot redirect the write outside the root.
 */
export async function writeArtifactAtomic(
  realRoot: string,
  relPath: string,
  data: string | Buffer,
): Promise<void> {
  const bad = artifactPathProblems(relPath);
  if (bad.length > 0) throw new Error(bad.join('; '));
  const parts = relPath.split('/');
  let dir = realRoot;
  for (const part of parts.slice(0, -1)) {
    dir = `${dir}${sep}${part}`;
    await mkdir(dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
    const st = await lstat(dir);
    if (!st.isDirectory() || st.isSymbolicLink())
      throw new Error(`${relPath}: ${part} is not a plain directory`);
  }
  const target = `${realRoot}${sep}${parts.join(sep)}`;
  const tmp = `${target}.${randomBytes(6).toString('hex')}.tmp`;
  const fh = await open(
    tmp,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0),
    0o644,
  );
  try {
    await fh.writeFile(data);
    await fh.sync();
  } catch (err) {
    await fh.close();
    await unlink(tmp).catch(() => {});
    throw err;
  }
  await fh.close();
  const existing = await lstat(target).catch(() => null);
  if (existing?.isSymbolicLink()) {
    await unlink(tmp).catch(() => {});
    throw new Error(`${relPath} is a symbolic link`);
  }
  await rename(tmp, target);
  // The rename survives a crash only once its directory is on disk too.
  await fsyncDir(dir);
}

export const writeJsonArtifact = (realRoot: string, relPath: string, value: unknown) =>
  writeArtifactAtomic(realRoot, relPath, `${JSON.stringify(value, null, 2)}\n`);

export interface BundleOutput {
  bundle: EvidenceBundle;
  digest: string;
  inventory: InventoryEntryT[];
}

/** The pre-review evidence bundle of an artifact root; any inventory problem is fatal. */
export async function computeEvidenceBundle(
  realRoot: string,
  runId: string,
  artifactByNode: Readonly<Record<NodeId, string>>,
): Promise<BundleOutput> {
  const inv = await buildInventory(realRoot);
  if (inv.problems.length > 0)
    throw new Error(`cannot inventory the artifact root: ${inv.problems.join('; ')}`);
  const bundle = evidenceBundle(runId, inv.entries, artifactByNode);
  return { bundle, digest: evidenceBundleDigest(bundle), inventory: inv.entries };
}

export interface RoleInput {
  actorId: string;
  sessionId: string;
  executionId: string;
  runtime?: string;
}
export type RosterInput = Record<keyof RosterT, RoleInput>;

export interface SignReviewInput {
  realRoot: string;
  runId: string;
  roster: RosterInput;
  artifactByNode: Readonly<Record<NodeId, string>>;
  privateKeyPem: string;
  keyId: string;
  verdict?: Review['verdict'];
  now?: Date;
}

/**
 * Builds and signs review/review.json: role evidence binds the route (scout) and the proof
 * (implementer, verifier) at their current hashes; the independent reviewer signs the bundle
 * digest, the inventory and the roster.
 */
export async function signReview(input: SignReviewInput): Promise<Review> {
  const { realRoot, artifactByNode } = input;
  const ref = async (path: string) => ({ path, sha256: (await claimArtifact(realRoot, path)).sha256 });
  const route = await ref(artifactByNode.route);
  const proof = await ref(artifactByNode.prove);
  const role = (r: RoleInput, evidence: { path: string; sha256: string }[]) => ({
    actorId: r.actorId,
    sessionId: r.sessionId,
    executionId: r.executionId,
    ...(r.runtime === undefined ? {} : { runtime: r.runtime }),
    evidence,
  });
  const roster: RosterT = {
    scout: role(input.roster.scout, [route]),
    implementer: role(input.roster.implementer, [proof]),
    verifier: role(input.roster.verifier, [proof]),
    independentReviewer: role(input.roster.independentReviewer, []),
  };
  const { digest, inventory } = await computeEvidenceBundle(realRoot, input.runId, artifactByNode);
  const verdict = input.verdict ?? 'approved';
  const value = signEd25519(
    reviewSigningBytes({ runId: input.runId, verdict, evidenceBundleDigest: digest, inventory, roster }),
    input.privateKeyPem,
  );
  return {
    schema: 'harness.review.v2',
    runId: input.runId,
    generatedAt: (input.now ?? new Date()).toISOString(),
    verdict,
    roster,
    evidenceBundleDigest: digest,
    inventory,
    validation: { runtime: 'harness-bridge' },
    signature: { keyId: input.keyId, algorithm: 'ed25519', value },
  };
}

/**
 * A writer's refusal: every problem the gate's own check found in what it was about to write, on
 * one line (exit 2); nothing is written.
 */
export function refuseProblems(what: string, problems: readonly string[]): void {
  if (problems.length > 0) refused(what, problems);
}

export function refused(what: string, problems: readonly string[]): never {
  throw new UsageError(`${what} not written: ${problems.join('; ')}`);
}
