import type { AdapterRecord, NodeId } from '../contract/index.js';
import { BridgeError } from '../contract/index.js';
import {
  AdapterPolicyError,
  defaultRunShape,
  type ResolvedAdapter,
  resolveAdapter,
} from '../validators/adapter.js';
import { ArtifactError, resolveRoot } from '../validators/artifact-root.js';
import type { BridgeContext } from './context.js';

/** The write-once part of a run's config that the first event or the create call seals. */
export interface RunSetup {
  artifactRoot: string | null;
  adapter: AdapterRecord | null;
  requiredNodes: NodeId[];
  artifactByNode: Record<NodeId, string>;
  commissioned: boolean;
}

/** What resolving a run's setup reads: the bridge's environment and the repository's adapter. */
export type SetupContext = Pick<BridgeContext, 'env' | 'repositoryAdapter'>;

/**
 * Resolves the artifact root (absolute, a real directory) and the adapter. A run's own adapter,
 * the one its request names (inside the artifact root, HARNESS_REPO_ROOT or an
 * HARNESS_ADAPTER_ROOTS entry; never through a link) or else a `project-adapter.json` in its
 * artifact root, wins over the repository's committed one, which applies when the run has none.
 * A run's own adapter may shape its nodes and artifact paths, but never be weaker than the
 * repository's: the agent chooses it, so one without finishLineAssurance where the repository
 * requires it is refused rather than let the run skip the review, packet and waiver rules. The
 * emitter never invents a root: without one, `artifact.written` is refused later.
 */
export async function resolveSetup(
  ctx: SetupContext,
  input: { artifactRoot?: string | undefined; adapterPath?: string | undefined },
): Promise<RunSetup> {
  let realRoot: string | null = null;
  if (input.artifactRoot !== undefined) {
    try {
      realRoot = await resolveRoot(input.artifactRoot);
    } catch (err) {
      if (err instanceof ArtifactError) throw new BridgeError('artifact_verification_failed', err.message);
      throw err;
    }
  }
  let own: ResolvedAdapter | null;
  try {
    own = await resolveAdapter({
      adapterPath: input.adapterPath,
      realArtifactRoot: realRoot,
      repoRoot: ctx.env.repoRoot,
      adapterRoots: ctx.env.adapterRoots,
    });
  } catch (err) {
    if (err instanceof AdapterPolicyError) throw new BridgeError('adapter_policy_violation', err.message);
    throw err;
  }
  const repository = ctx.repositoryAdapter;
  if (own && repository?.record.finishLineAssurance && !own.record.finishLineAssurance) {
    throw new BridgeError(
      'adapter_policy_violation',
      `the run's adapter does not require finishLineAssurance, and the repository's committed ${repository.record.committed?.path ?? 'adapter'} does: name an adapter that requires it, or none`,
    );
  }
  const adapter = own ?? repository;
  const shape = adapter ?? defaultRunShape();
  return {
    artifactRoot: realRoot,
    adapter: adapter?.record ?? null,
    requiredNodes: shape.requiredNodes,
    artifactByNode: shape.artifactByNode,
    commissioned: adapter?.record.finishLineAssurance === true,
  };
}

/**
 * Whether a run's sealed adapter is open to the run's first request: none, or the repository's,
 * which the run took by default (its create call named none) and may still replace with its own
 * until its first event is appended.
 */
export function adapterOpen(sealed: AdapterRecord | null): boolean {
  return sealed === null || sealed.rootKind === 'repository';
}

/** True when a repeated root/adapter names what is already sealed (compared by resolved path). */
export async function sameSetup(
  ctx: SetupContext,
  sealed: { artifactRoot: string | null; adapter: AdapterRecord | null },
  input: { artifactRoot?: string | undefined; adapterPath?: string | undefined },
): Promise<string[]> {
  const differs: string[] = [];
  if (input.artifactRoot !== undefined) {
    const real = await resolveRoot(input.artifactRoot).catch(() => null);
    if (real !== sealed.artifactRoot) differs.push('artifactRoot');
  }
  if (input.adapterPath !== undefined) {
    const setup = await resolveSetup(ctx, { ...input, artifactRoot: sealed.artifactRoot ?? undefined }).then(
      (s) => s,
      () => null,
    );
    if (setup?.adapter?.path !== sealed.adapter?.path || setup?.adapter?.sha256 !== sealed.adapter?.sha256) {
      differs.push('adapterPath');
    }
  }
  return differs;
}
