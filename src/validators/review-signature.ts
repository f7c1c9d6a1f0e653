import { REVIEW_SCHEMA_ID, type Review } from '../contract/artifacts/index.js';
import { loadJson, schemaProblems } from './documents.js';
import { evidenceBundle, evidenceBundleDigest, reviewSigningBytes } from './evidence.js';
import type { ContentRule } from './facts.js';
import type { InputsOf } from './inputs.js';
import { buildInventory, comparePaths, inventoryDrift } from './inventory.js';
import { REVIEW_PATH } from './review.js';
import { verifyEd25519 } from './signature.js';
import { loadTrustStore } from './trust-store.js';

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
  const loaded = await loadJson(env.realRoot, REVIEW_PATH);
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
  problems.push(...inventoryDrift(signed, current.entries).map((d) => `unsigned evidence change: ${d}`));
  return problems;
};
