import type { CreateRunBody, RunConfig } from '../contract/index.js';
import {
  BridgeError,
  CREATE_RUN_METADATA,
  createRunTextProblems,
  modeSourceProblems,
  runModeOf,
} from '../contract/index.js';
import { secretDigest } from '../storage/mac.js';
import type { OpenRun } from '../storage/types.js';
import type { BridgeContext } from './context.js';
import { reverifyCompleted } from './reverify.js';
import { adapterOpen, type RunSetup, resolveSetup, sameSetup } from './run-setup.js';

/** Builds the sealed config for a new run from its first request. */
export function newConfig(
  ctx: BridgeContext,
  runId: string,
  setup: RunSetup,
  extra: Pick<RunConfig, 'metadata' | 'runMode' | 'eventSource'>,
): RunConfig {
  return {
    schema: 'harness.run-config.v1',
    runId,
    createdAt: ctx.store.nextCreatedAt(),
    ...setup,
    trustPin: ctx.env.trustPin,
    humanTokenDigest: secretDigest(ctx.env.integrityKey, ctx.env.humanToken),
    ...extra,
  };
}

/** What a request's root/adapter means for a run: the fields that differ, or the config to seal. */
export interface SetupPlan {
  differs: string[];
  /** The config with what the request adds, to be sealed once every other check has passed. */
  seal: RunConfig | null;
}

/**
 * Before the run's first event, each of the root and the adapter is write-once: a sealed one must
 * be repeated exactly, a missing one may still be added by the create/sync call or the first event
 * (so a pack whose create call set the root supplies its adapter on the first event). The
 * repository's adapter, which a run named none takes by default, counts as missing here: the
 * first event may still name the run's own (never a weaker one, run-setup.ts), and a root it adds
 * may hold one. After the first event nothing changes.
 *
 * Nothing is written here: a request refused for any other reason (another field differs, the
 * event's mode, approval or artifact is refused) must not seal its root or adapter, which would
 * lock out the corrected retry. The caller seals `seal` last, just before its 2xx or the journal
 * append (CONTRACT 4: the config is durable before the record).
 */
export async function planSetup(
  ctx: BridgeContext,
  run: OpenRun,
  input: { artifactRoot?: string | undefined; adapterPath?: string | undefined },
): Promise<SetupPlan> {
  const { config } = run;
  const open = adapterOpen(config.adapter);
  const addsRoot = config.artifactRoot === null && input.artifactRoot !== undefined;
  // A run sealed with no adapter before the bridge had a repository adapter takes it now.
  const addsAdapter =
    open && (input.adapterPath !== undefined || (config.adapter === null && ctx.repositoryAdapter !== null));
  if (run.journal.count > 0 || (!addsRoot && !addsAdapter))
    return { differs: await sameSetup(ctx, config, input), seal: null };
  const differs = await sameSetup(ctx, config, {
    artifactRoot: addsRoot ? undefined : input.artifactRoot,
    adapterPath: open ? undefined : input.adapterPath,
  });
  if (differs.length > 0) return { differs, seal: null };
  const sealed = open ? null : config.adapter;
  const setup = await resolveSetup(ctx, {
    artifactRoot: input.artifactRoot ?? config.artifactRoot ?? undefined,
    adapterPath: sealed ? sealed.path : input.adapterPath,
  });
  // What is sealed stays as sealed: a root that now resolves elsewhere (its path swapped for a
  // link), or an adapter re-read with other bytes, refuses the addition instead of resealing.
  if (config.artifactRoot !== null && setup.artifactRoot !== config.artifactRoot)
    return { differs: ['artifactRoot'], seal: null };
  if (sealed && (setup.adapter?.path !== sealed.path || setup.adapter.sha256 !== sealed.sha256))
    return { differs: ['adapterPath'], seal: null };
  return {
    differs: [],
    seal: {
      ...config,
      ...setup,
      artifactRoot: config.artifactRoot ?? setup.artifactRoot,
      adapter: sealed ?? setup.adapter,
      commissioned: config.commissioned || setup.commissioned,
    },
  };
}

/** POST /runs: create once; an identical repeat returns the run; a differing field is 409. */
export async function createRun(
  ctx: BridgeContext,
  body: CreateRunBody,
): Promise<{ created: boolean; run: OpenRun }> {
  const problems = createRunTextProblems(body);
  if (body.runMode !== undefined && body.eventSource !== undefined)
    problems.push(...modeSourceProblems(body.runMode, body.eventSource));
  if (problems.length > 0)
    throw new BridgeError('run_creation_contract_violation', 'the run violates the contract', problems);
  const loaded = await ctx.store.load(body.id, 'write');
  if (loaded.kind === 'quarantined')
    throw new BridgeError('run_quarantined', 'the run is quarantined', loaded.quarantine.reasons);
  const metadata: RunConfig['metadata'] = {};
  for (const name of CREATE_RUN_METADATA) if (body[name] !== undefined) metadata[name] = body[name];
  if (loaded.kind === 'missing') {
    const setup = await resolveSetup(ctx, body);
    const config = newConfig(ctx, body.id, setup, {
      metadata,
      runMode: body.runMode ?? null,
      eventSource: body.eventSource ?? null,
    });
    return { created: true, run: await ctx.store.create(config) };
  }
  const run = loaded.run;
  try {
    // A repeat for a completed run answers only after the same re-verification a read does: the
    // bridge never returns a stale complete state (SPEC), and drift quarantines the run here too.
    await run.journal.idle();
    await reverifyCompleted(ctx, run);
    const quarantine = ctx.store.quarantineOf(run.runId);
    if (quarantine) throw new BridgeError('run_quarantined', 'the run is quarantined', quarantine.reasons);
    const differs = CREATE_RUN_METADATA.filter(
      (n) => body[n] !== undefined && body[n] !== run.config.metadata[n],
    );
    const mode = runModeOf(run.state, run.config);
    if (body.runMode !== undefined && body.runMode !== mode) differs.push('runMode' as never);
    if (body.eventSource !== undefined && body.eventSource !== run.config.eventSource) {
      differs.push('eventSource' as never);
    }
    const plan = await planSetup(ctx, run, body);
    differs.push(...(plan.differs as never[]));
    if (differs.length > 0) {
      throw new BridgeError(
        'run_already_exists',
        'a run with this ID exists with different fields',
        differs.map((f) => `${f} differs from the stored run`),
      );
    }
    if (plan.seal) await ctx.store.sealConfig(run, plan.seal);
    return { created: false, run };
  } catch (err) {
    ctx.store.release(run);
    throw err;
  }
}
