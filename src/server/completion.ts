import type { OpenRun } from '../storage/types.js';
import type { RunFacts } from '../validators/facts.js';
import { type NextStep, nextStep } from '../validators/next-step.js';
import { type ProblemKind, texts } from '../validators/problem.js';
import { structuralFindings, structuralProblems } from '../validators/structural.js';
import type { VerifiedDigests } from '../validators/verified-bytes.js';
import type { HashPool } from '../workers/pool.js';
import { type ArtifactCheck, checkArtifacts, type DocumentSeal, documentSeal } from './artifact-check.js';
import type { BridgeContext } from './context.js';

/** Every artifact the journal claims, at its latest claim per path. */
function claimsOf(run: OpenRun): { path: string; sha256: string }[] {
  return Object.values(run.state.artifacts).map((a) => ({ path: a.path, sha256: a.sha256 }));
}

/**
 * Re-resolves and re-hashes claimed artifacts in the hash pool (small files batched into one
 * task); a missing, unreadable or changed file is a problem. The pool path of the gate's and the
 * reads' artifact check (artifact-check.ts) without its credential scan: what bench:finish-line
 * measures.
 */
export async function rehashClaims(
  pool: HashPool,
  root: string,
  claims: readonly { path: string; sha256: string }[],
): Promise<{ digests: Map<string, string>; problems: string[] }> {
  const digests = new Map<string, string>();
  const problems: string[] = [];
  const results = await pool.claimMany(
    root,
    claims.map((c) => c.path),
  );
  claims.forEach((claim, i) => {
    const now = results[i];
    if (!now?.ok) {
      problems.push(`artifact ${claim.path} cannot be re-verified: ${now ? now.message : 'no result'}`);
      return;
    }
    digests.set(claim.path, now.sha256);
    if (now.sha256 !== claim.sha256) problems.push(`artifact ${claim.path} changed since it was verified`);
  });
  return { digests, problems: problems.sort() };
}

/** Re-hashes every artifact the run's journal claims (no scan): the bench's yardstick for a read. */
export function rehashClaimed(
  ctx: BridgeContext,
  run: OpenRun,
): Promise<{ digests: Map<string, string>; problems: string[] }> {
  const root = run.config.artifactRoot;
  if (root === null) return Promise.resolve({ digests: new Map(), problems: [] });
  return rehashClaims(ctx.pool, root, claimsOf(run));
}

export function factsOf(run: OpenRun): RunFacts {
  return { runId: run.runId, config: run.config, state: run.state };
}

/**
 * What an artifact check hashed, handed to the validators (FinishLineEnv.verified) so they decide
 * on exactly those bytes: the digest of every file it resolved, and null for each path it looked
 * for and found absent. The completed-run verdict cache key holds the digests, and binds the
 * absent paths' identities (they are by-name inputs or referenced documents).
 */
export function verifiedBy(check: ArtifactCheck): VerifiedDigests {
  // fromEntries defines own properties: a path such as "__proto__" is bound like any other.
  return Object.fromEntries([...[...check.absent].map((path) => [path, null]), ...check.digests]);
}

export interface CompletionPreview {
  ready: boolean;
  problems: string[];
  steps: (NextStep & { kind: ProblemKind })[];
}

/**
 * What the run view's completion preview shows: the structural rules, without hashing, and the
 * next step of each. The fixes are rendered without the artifact root: a view never shows an
 * absolute path.
 */
export function completionPreview(run: OpenRun): CompletionPreview {
  if (run.state.status === 'completed') return { ready: true, problems: [], steps: [] };
  const facts = factsOf(run);
  const found = structuralFindings(facts);
  return {
    ready: found.length === 0,
    problems: texts(found),
    steps: found.map((p) => ({ ...nextStep(p, { facts, root: null }), kind: p.kind })),
  };
}

/**
 * The finish-line gate (SPEC completion rules; rule 10 above all): every claimed artifact (the
 * required ones among them, latest claim per path: the set completed-run reads re-hash, so an
 * accepted completion is not quarantined by the next read) is re-hashed before and after the
 * validator sequence, and any change in between rejects the completion. The validators get the
 * first pass's digests and refuse any read that does not hash to them: a file swapped only for
 * their read and put back before the second pass (A-B-A) is a problem too, not a pass. Both
 * passes are the privacy check too (CONTRACT 6): a claimed artifact or referenced document that
 * carries a bridge credential value refuses the completion, as it would quarantine a read.
 */
export async function completionGate(
  ctx: BridgeContext,
  run: OpenRun,
): Promise<{ problems: string[]; digests: Map<string, string>; documents: DocumentSeal }> {
  const facts = factsOf(run);
  const problems = structuralProblems(facts);
  const before = await checkArtifacts(ctx, run, 'gate');
  problems.push(...before.problems);
  if (ctx.finishLine) {
    problems.push(
      ...(await ctx.finishLine(facts, {
        realRoot: run.config.artifactRoot,
        repoRoot: ctx.env.repoRoot,
        trustPin: run.config.trustPin,
        stage: 'gate',
        verified: verifiedBy(before),
        artifactMaxBytes: ctx.env.artifactMaxBytes,
      })),
    );
  }
  const after = await checkArtifacts(ctx, run, 'gate');
  // Any file of the check that changed, vanished or appeared since the first pass: bytes the
  // validators or the privacy scan did not see.
  for (const path of new Set([...before.digests.keys(), ...after.digests.keys()])) {
    if (after.digests.get(path) !== before.digests.get(path))
      problems.push(`artifact ${path} changed during the finish-line checks`);
  }
  // The completion seal records the claimed artifacts (at most one per node, plus a self-heal
  // proposal), each unclaimed document and by-name input, and one digest over the paths the
  // documents name: a review inventory can name every file under the root, and the sealed record
  // must fit the journal's record ceiling.
  const claimed = new Map([...before.digests].filter(([path]) => Object.hasOwn(run.state.artifacts, path)));
  return { problems: [...new Set(problems)], digests: claimed, documents: documentSeal(before) };
}
