import type { OpenRun } from '../storage/run-files.js';
import type { RunFacts } from '../validators/facts.js';
import { structuralProblems } from '../validators/structural.js';
import type { HashPool } from '../workers/pool.js';
import type { BridgeContext } from './context.js';

/**
 * Every artifact the journal claims, at its latest claim per path: the set completed-run reads
 * re-hash, so the gate covers the same set (a self-heal proposal, a non-required or skipped
 * node's artifact) and a completion it accepts is not quarantined by the very next read.
 */
function claimsOf(run: OpenRun): { path: string; sha256: string }[] {
  return Object.values(run.state.artifacts).map((a) => ({ path: a.path, sha256: a.sha256 }));
}

/**
 * Re-resolves and re-hashes claimed artifacts in the hash pool (small files batched into one
 * task); a missing, unreadable or changed file is a problem. The gate's and the bench's one path.
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

/** Re-resolves and re-hashes every artifact the run's journal claims. */
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

/** What the run view's completion preview shows: the structural rules, without hashing. */
export function previewProblems(run: OpenRun): string[] {
  return structuralProblems(factsOf(run));
}

/**
 * The finish-line gate (SPEC completion rules; rule 10 above all): every claimed artifact (the
 * required ones among them) is re-hashed before and after the validator sequence, and any change
 * in between rejects the completion even if every validator passed on the bytes it saw.
 */
export async function completionGate(
  ctx: BridgeContext,
  run: OpenRun,
): Promise<{ problems: string[]; digests: Map<string, string> }> {
  const facts = factsOf(run);
  const problems = structuralProblems(facts);
  const before = await rehashClaimed(ctx, run);
  problems.push(...before.problems);
  if (ctx.finishLine) {
    problems.push(
      ...(await ctx.finishLine(facts, {
        realRoot: run.config.artifactRoot,
        repoRoot: ctx.env.repoRoot,
        trustPin: run.config.trustPin,
      })),
    );
  }
  const after = await rehashClaimed(ctx, run);
  for (const [path, digest] of before.digests) {
    if (after.digests.get(path) !== digest)
      problems.push(`artifact ${path} changed during the finish-line checks`);
  }
  return { problems: [...new Set(problems)], digests: before.digests };
}
