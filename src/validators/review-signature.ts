import { REVIEW_SCHEMA_ID, type Review } from '../contract/artifacts/index.js';
import { loadJson, schemaProblems } from './documents.js';
import { evidenceBundle, evidenceBundleDigest, reviewSigningBytes } from './evidence.js';
import type { ContentRule } from './facts.js';
import type { InputsOf } from './inputs.js';
import { buildInventory, comparePaths, type Inventory, inventoryDrift, isPostReview } from './inventory.js';
import { REVIEW_PATH } from './review.js';
import { verifyEd25519 } from './signature.js';
import { loadTrustStore } from './trust-store.js';
import { changedWhileChecked, unverifiedRead, type VerifiedDigests } from './verified-bytes.js';

/** The review, an inventory of the whole root, and the trust store committed at HEAD. */
export const reviewSignatureInputs: InputsOf = () => ({
  files: [REVIEW_PATH],
  enumeratesRoot: true,
  repository: { trustStore: true },
});

/**
 * The independent reviewer's Ed25519 signature over the evidence bundle, the artifact inventory
 * and the roster, by an ACTIVE key of the pinned, committed trust store whose allowedActorIds
 * names the independentReviewer. The inventory must still match the artifact root (the rule-9
 * refusal "unsigned evidence change"). Nothing here falls back: an unknown key id, a pin mismatch
 * or an unreadable store is a problem.
 */
export const reviewSignature: ContentRule = async (facts, env) => {
  if (env.realRoot === null) return ['the review signature cannot be checked: the run has no artifact root'];
  const loaded = await loadJson(env.realRoot, REVIEW_PATH, env.verified);
  if (loaded.kind !== 'ok' || schemaProblems(REVIEW_PATH, REVIEW_SCHEMA_ID, loaded.value).length > 0) {
    return [`the signature of ${REVIEW_PATH} cannot be checked: the review is missing or invalid`];
  }
  const review = loaded.value as Review;
  const problems: string[] = [];

  const trust = await loadTrustStore(env.repoRoot, env.trustPin);
  if (!trust.ok) problems.push(...trust.problems);
  else {
    const key = trust.store.keys.get(review.signature.keyId);
    const reviewer = review.roster.independentReviewer.actorId;
    if (!key) problems.push(`signing key ${review.signature.keyId} is not in the trust store`);
    else {
      if (key.status !== 'active') problems.push(`signing key ${key.keyId} is ${key.status}`);
      if (!key.allowedActorIds.has(reviewer)) {
        problems.push(`signing key ${key.keyId} is not allowed for the independent reviewer ${reviewer}`);
      }
      const task = {
        payload: reviewSigningBytes(review),
        signatureBase64: review.signature.value,
        publicKeyPem: key.publicKeyPem,
      };
      const result = await (env.workers ? env.workers.verifyEd25519(task) : verifyEd25519(task));
      if (!result.ok) {
        problems.push(
          result.error === undefined
            ? `the review signature does not verify with key ${key.keyId}`
            : `the review signature could not be checked: ${result.error}`,
        );
      }
    }
  }

  const signed = review.inventory;
  for (let i = 1; i < signed.length; i++) {
    if (comparePaths(signed[i - 1]!.path, signed[i]!.path) >= 0) {
      problems.push('the signed inventory is not sorted by path without duplicates');
      break;
    }
  }
  const bundle = evidenceBundle(facts.runId, signed, facts.config.artifactByNode);
  if (evidenceBundleDigest(bundle) !== review.evidenceBundleDigest) {
    problems.push('the evidence bundle digest does not match the signed inventory of this run');
  }
  const current = await buildInventory(env.realRoot, env.workers);
  problems.push(...current.problems);
  problems.push(...unverifiedEntries(current, env.verified));
  problems.push(...inventoryDrift(signed, current.entries).map((d) => `unsigned evidence change: ${d}`));
  return problems;
};

/**
 * The inventory hashes each file once; the drift check decides on those digests, so each must be
 * the bytes the bridge verified at that path, and a file it verified (outside the post-review
 * paths) must be listed: hidden from the walk, it would not count as unsigned.
 */
function unverifiedEntries(inventory: Inventory, verified: VerifiedDigests | undefined): string[] {
  if (verified === undefined) return [];
  const problems: string[] = [];
  const listed = new Set<string>();
  for (const e of inventory.entries) {
    listed.add(e.path);
    const problem = unverifiedRead(verified, e.path, e.sha256);
    if (problem !== null) problems.push(problem);
  }
  // A walk with problems already fails the rule, and may have stopped early.
  if (inventory.problems.length > 0) return problems;
  for (const [path, sha256] of Object.entries(verified)) {
    if (sha256 !== null && !isPostReview(path) && !listed.has(path)) problems.push(changedWhileChecked(path));
  }
  return problems;
}
