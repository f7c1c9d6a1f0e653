import { REVIEW_ROLES, REVIEW_SCHEMA_ID, type Review } from '../contract/artifacts/index.js';
import { loadJson, schemaProblems } from './documents.js';
import type { ArtifactFacts, ContentRule, FinishLineEnv } from './facts.js';
import type { InputsOf } from './inputs.js';
import { selfDeclaredTrust } from './json-scan.js';
import { verifiedDigest } from './verified-bytes.js';

export const REVIEW_PATH = 'review/review.json';
const IDENTITY_FIELDS = ['actorId', 'sessionId', 'executionId'] as const;

/** The review and the role evidence it binds. */
export const reviewInputs: InputsOf = () => ({ files: [REVIEW_PATH], documents: [REVIEW_PATH] });

/**
 * harness.review.v2 shape, run binding, verdict, distinct role identities (the rule-9 refusal
 * "collapsed role identity"), role evidence bindings (scout -> route, implementer and verifier ->
 * proof, each at the current bytes) and the refusal of self-declared reviewer trust. The
 * signature itself is the review-signature rule.
 */
export const reviewRule: ContentRule = (facts, env) => reviewProblems(facts, env);

/** The rule on any artifact root: `harness packet write` refuses to bind a review it would fail. */
export async function reviewProblems(
  facts: ArtifactFacts,
  env: Pick<FinishLineEnv, 'realRoot' | 'verified' | 'artifactMaxBytes'>,
): Promise<string[]> {
  if (env.realRoot === null) return [`${REVIEW_PATH} cannot be read: the run has no artifact root`];
  const loaded = await loadJson(env.realRoot, REVIEW_PATH, env.verified);
  if (loaded.kind === 'missing') return [`${REVIEW_PATH} is missing`];
  if (loaded.kind === 'error') return [loaded.problem];
  const problems = selfDeclaredTrust(loaded.value).map(
    (at) => `self-declared reviewer trust: ${REVIEW_PATH} carries key or trust material at ${at}`,
  );
  const shape = schemaProblems(REVIEW_PATH, REVIEW_SCHEMA_ID, loaded.value);
  if (shape.length > 0) return [...problems, ...shape];
  const review = loaded.value as Review;
  if (review.runId !== facts.runId) problems.push(`${REVIEW_PATH} runId ${review.runId} is not this run`);
  if (review.verdict !== 'approved') problems.push(`the review verdict is ${review.verdict}`);
  problems.push(...collapsedRoles(review));
  problems.push(...(await evidenceBindings(review, facts.config.artifactByNode, env.realRoot, env)));
  return problems;
}

export function collapsedRoles(review: Pick<Review, 'roster'>): string[] {
  const problems: string[] = [];
  for (const field of IDENTITY_FIELDS) {
    const seen = new Map<string, string>();
    for (const role of REVIEW_ROLES) {
      const value = review.roster[role][field];
      const other = seen.get(value);
      if (other !== undefined) problems.push(`collapsed role identity: ${other} and ${role} share ${field}`);
      else seen.set(value, role);
    }
  }
  return problems;
}

async function evidenceBindings(
  review: Review,
  artifactByNode: Readonly<Record<string, string>>,
  root: string,
  env: Pick<FinishLineEnv, 'verified' | 'artifactMaxBytes'>,
): Promise<string[]> {
  const problems: string[] = [];
  const need: [(typeof REVIEW_ROLES)[number], string][] = [
    ['scout', artifactByNode['route'] ?? ''],
    ['implementer', artifactByNode['prove'] ?? ''],
    ['verifier', artifactByNode['prove'] ?? ''],
  ];
  for (const [role, path] of need) {
    if (!review.roster[role].evidence.some((e) => e.path === path)) {
      problems.push(`the ${role} evidence does not bind ${path}`);
    }
  }
  for (const role of REVIEW_ROLES) {
    for (const ref of review.roster[role].evidence) {
      const current = await verifiedDigest(root, ref.path, env.verified, env.artifactMaxBytes);
      if (current instanceof Error) problems.push(`the ${role} evidence ${ref.path}: ${current.message}`);
      else if (current !== ref.sha256) {
        problems.push(`unsigned evidence change: ${ref.path} bound by the ${role} has changed`);
      }
    }
  }
  return problems;
}
