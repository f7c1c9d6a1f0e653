import { createHash } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { canonicalBytes } from '../storage/mac.js';
import { readNoFollow } from '../storage/no-follow.js';
import type { OpenRun } from '../storage/types.js';
import { ADAPTER_MAX_BYTES } from '../validators/adapter.js';
import { committedAdapterDigest } from '../validators/committed-adapter.js';
import { validatorInputs } from '../validators/finish-line.js';
import type { StatInventory } from '../workers/stat-inventory.js';
import { type ArtifactCheck, checkArtifacts, digestsDigest, documentDrift } from './artifact-check.js';
import { factsOf, verifiedBy } from './completion.js';
import type { BridgeContext } from './context.js';
import { verdictInputsDigest } from './verdict-inputs.js';

const VERDICT_CACHE_MAX = 4096;
const DRIFT_RECHECK_MS = 100;

/**
 * The sealed adapter's bytes as they are now, or null when they cannot be what was sealed: gone, a
 * link, not a regular file, or larger than any adapter. The adapter can sit in the agent's own
 * artifact root, so it is opened as the data directory's files are: a FIFO put in its place would
 * otherwise hang the read, and the run's queue slot with it, instead of quarantining the run.
 */
const adapterBytes = (path: string): Promise<Buffer | null> =>
  readNoFollow(path, ADAPTER_MAX_BYTES).catch(() => null);

/**
 * The validator code, adapter and trust pin as the run sealed them. A repository's adapter is
 * compared as the commit it was sealed from holds it (committedAdapterDigest), never as the working
 * tree or a later HEAD does: the working copy is the agent's to edit, and a later commit changing
 * the pack applies to later runs, not to this one.
 */
async function runtimeDrift(ctx: BridgeContext, run: OpenRun): Promise<string[]> {
  const problems: string[] = [];
  const seal = run.state.completionSeal;
  if (!seal) return ['the completion record carries no seal'];
  if ((await ctx.validatorDigest()) !== seal.validatorDigest)
    problems.push('validator code changed since completion');
  const adapter = run.config.adapter;
  if (adapter) {
    const now = adapter.committed
      ? await committedAdapterDigest(adapter.committed)
      : await adapterBytes(adapter.path).then((b) =>
          b ? createHash('sha256').update(b).digest('hex') : null,
        );
    if (now !== adapter.sha256 || now !== seal.adapterSha256)
      problems.push('adapter changed since the run sealed it');
  }
  if (run.config.trustPin !== ctx.env.trustPin) problems.push('review-trust pin differs from the sealed pin');
  return problems;
}

/**
 * The finish-line verdict for a completed run, from a cache keyed by everything in the bridge's
 * view that could change it: journal head, validator runtime, trust pin, closure status, current
 * digests of the checked artifacts, and the identity of exactly what this run's validators read
 * under the artifact root (verdict-inputs.ts: the files they read by name and the paths named in
 * the documents they follow, or the root's whole lstat inventory when a rule enumerates it) and in
 * the git repository (the trust store at HEAD, the commits the RCA and proof name), as far as this
 * run's rules read it at the `read` stage, which never compares the working tree with the proof. A hit replays a verdict computed for exactly these inputs; it never turns a failure into a pass.
 * Without an inputs digest (an identity that cannot be taken, a root too large to walk) the
 * verdict is never answered from the cache.
 */
async function verdict(
  ctx: BridgeContext,
  run: OpenRun,
  check: ArtifactCheck,
  inputs: string | null,
): Promise<string[]> {
  if (!ctx.finishLine) return [];
  const cacheable = inputs !== null;
  const key = createHash('sha256')
    .update(
      canonicalBytes({
        runId: run.runId,
        head: run.journal.headMac,
        runtime: await ctx.validatorDigest(),
        trustPin: run.config.trustPin,
        status: run.state.status,
        // Also what the validators are told was verified (verifiedBy is a function of these).
        digests: digestsDigest(check),
        inputs,
      }),
    )
    .digest('hex');
  const cached = cacheable ? ctx.verdicts.get(key) : undefined;
  if (cached) {
    ctx.cache.hits++;
    ctx.metrics.completedRunRead(true);
    return cached;
  }
  ctx.cache.executions++;
  ctx.metrics.completedRunRead(false);
  const problems = await ctx.finishLine(factsOf(run), {
    realRoot: run.config.artifactRoot,
    repoRoot: ctx.env.repoRoot,
    trustPin: run.config.trustPin,
    // What the completion bound, not the working tree against the proof (FinishLineStage).
    stage: 'read',
    verified: verifiedBy(check),
    artifactMaxBytes: ctx.env.artifactMaxBytes,
  });
  if (!cacheable) return problems;
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
  // A run whose rules enumerate the root walks its lstat inventory once, for both the verdict
  // cache key and the artifact check (an unchanged root's check is not repeated file by file).
  const root = run.config.artifactRoot;
  const walk =
    root !== null && validatorInputs(factsOf(run), 'read').enumeratesRoot
      ? ctx.pool.statInventory(root).catch(() => null)
      : undefined;
  // Taken while the artifacts are re-hashed, and before any validator runs; only the cache needs it.
  const inputs = ctx.finishLine
    ? verdictInputsDigest(ctx.pool, run, ctx.env.repoRoot, walk).catch(() => null)
    : Promise.resolve(null);
  // The claims, the privacy scan and the documents the completion sealed.
  const seal = run.state.completionSeal ?? {};
  const check = async (inventory: StatInventory | null) => {
    const artifacts = await checkArtifacts(ctx, run, 'read', inventory);
    return { artifacts, problems: [...artifacts.problems, ...documentDrift(seal, artifacts)] };
  };
  let drift = await check((await walk) ?? null);
  if (drift.problems.length > 0) {
    await delay(DRIFT_RECHECK_MS);
    drift = await check(null);
  }
  const problems = [...drift.problems, ...(await runtimeDrift(ctx, run))];
  if (problems.length === 0) problems.push(...(await verdict(ctx, run, drift.artifacts, await inputs)));
  await ctx.store.quarantineForDrift(run.runId, problems);
}
