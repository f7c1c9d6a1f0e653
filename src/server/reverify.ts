import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { canonicalBytes } from '../storage/mac.js';
import type { OpenRun } from '../storage/run-files.js';
import { factsOf } from './completion.js';
import type { BridgeContext } from './context.js';

/** Documents whose referenced paths and bytes the privacy check covers beyond the claimed artifacts. */
const REFERENCED_DOCUMENTS = ['run/packet.json', 'review/review.json', 'rca/rca.json'];
const VERDICT_CACHE_MAX = 4096;
const DRIFT_RECHECK_MS = 100;

/**
 * Re-hashes every claimed artifact (and the packet, review and RCA documents when present) in one
 * pass that also scans for the bridge's credential values. Returns the current digests and the
 * problems: a missing, changed, escaping or credential-bearing file.
 */
async function artifactDrift(
  ctx: BridgeContext,
  run: OpenRun,
): Promise<{ digests: Record<string, string>; problems: string[] }> {
  const root = run.config.artifactRoot;
  const digests: Record<string, string> = {};
  const problems: string[] = [];
  if (root === null) return { digests, problems };
  const needles = [ctx.env.accessToken, ctx.env.humanToken, ctx.env.integrityKey.toString('utf8')];
  const claimed = run.state.artifacts;
  const paths = [...new Set([...Object.keys(claimed), ...REFERENCED_DOCUMENTS])];
  const expected = Object.fromEntries(Object.values(claimed).map((a) => [a.path, a.sha256]));
  const results = await ctx.pool.claimMany(root, paths, { needles, expected });
  for (const r of results) {
    if (!r.ok) {
      if (claimed[r.path] || !r.missing) problems.push(`artifact ${r.path}: ${r.message}`);
      continue;
    }
    digests[r.path] = r.sha256;
    if (claimed[r.path] && claimed[r.path]?.sha256 !== r.sha256)
      problems.push(`artifact ${r.path} changed after completion`);
    if (r.leaked) problems.push(`artifact ${r.path} contains a bridge credential value`);
  }
  return { digests, problems: problems.sort() };
}

async function runtimeDrift(ctx: BridgeContext, run: OpenRun): Promise<string[]> {
  const problems: string[] = [];
  const seal = run.state.completionSeal;
  if (!seal) return ['the completion record carries no seal'];
  if ((await ctx.validatorDigest()) !== seal.validatorDigest)
    problems.push('validator code changed since completion');
  const adapter = run.config.adapter;
  if (adapter) {
    const bytes = await readFile(adapter.path).catch(() => null);
    const now = bytes ? createHash('sha256').update(bytes).digest('hex') : null;
    if (now !== adapter.sha256 || now !== seal.adapterSha256)
      problems.push('adapter changed since the run sealed it');
  }
  if (run.config.trustPin !== ctx.env.trustPin) problems.push('review-trust pin differs from the sealed pin');
  return problems;
}

/**
 * The finish-line verdict for a completed run, from a cache keyed by everything that could change
 * it (journal head, validator runtime, trust pin, closure status, current artifact digests). A hit
 * replays a verdict computed for exactly these inputs; it never turns a failure into a pass.
 */
async function verdict(ctx: BridgeContext, run: OpenRun, digests: Record<string, string>): Promise<string[]> {
  if (!ctx.finishLine) return [];
  const key = createHash('sha256')
    .update(
      canonicalBytes({
        runId: run.runId,
        head: run.journal.headMac,
        runtime: await ctx.validatorDigest(),
        trustPin: run.config.trustPin,
        status: run.state.status,
        digests,
      }),
    )
    .digest('hex');
  const cached = ctx.verdicts.get(key);
  if (cached) {
    ctx.cache.hits++;
    return cached;
  }
  ctx.cache.executions++;
  const problems = await ctx.finishLine(factsOf(run), {
    realRoot: run.config.artifactRoot,
    repoRoot: ctx.env.repoRoot,
    trustPin: run.config.trustPin,
  });
  if (ctx.verdicts.size >= VERDICT_CACHE_MAX) ctx.verdicts.delete(ctx.verdicts.keys().next().value as string);
  ctx.verdicts.set(key, problems);
  return problems;
}

/**
 * SPEC: reads of a completed run repeat the artifact, privacy, runtime, approval and finish-line
 * checks. Byte drift must persist across a short recheck (a writer mid-rename is not drift); any
 * remaining problem quarantines the run, and the caller shows it quarantined.
 */
export async function reverifyCompleted(ctx: BridgeContext, run: OpenRun): Promise<void> {
  if (run.state.status !== 'completed' || ctx.store.quarantineOf(run.runId)) return;
  let drift = await artifactDrift(ctx, run);
  if (drift.problems.length > 0) {
    await delay(DRIFT_RECHECK_MS);
    drift = await artifactDrift(ctx, run);
  }
  const problems = [...drift.problems, ...(await runtimeDrift(ctx, run))];
  if (problems.length === 0) problems.push(...(await verdict(ctx, run, drift.digests)));
  for (const p of problems) ctx.store.quarantine(run.runId, p);
}
