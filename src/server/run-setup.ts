import type { AdapterRecord, NodeId } from '../contract/index.js';
import { BridgeError } from '../contract/index.js';
import { AdapterPolicyError, defaultRunShape, resolveAdapter } from '../validators/adapter.js';
import { ArtifactError, resolveRoot } from '../validators/artifact-root.js';
import type { BridgeEnv } from './env.js';

/** The write-once part of a run's config that the first event or the create call seals. */
export interface RunSetup {
  artifactRoot: string | null;
  adapter: AdapterRecord | null;
  requiredNodes: NodeId[];
  artifactByNode: Record<NodeId, string>;
  commissioned: boolean;
}

/**
 * Resolves the artifact root (absolute, a real directory) and the adapter (inside the artifact
 * root, HARNESS_REPO_ROOT or an HARNESS_ADAPTER_ROOTS entry; never through a link). The emitter
 * never invents a root: without one, `artifact.written` is refused later.
 */
export async function resolveSetup(
  env: BridgeEnv,
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
  try {
    const adapter = await resolveAdapter({
      adapterPath: input.adapterPath,
      realArtifactRoot: realRoot,
      repoRoot: env.repoRoot,
      adapterRoots: env.adapterRoots,
    });
    const shape = adapter ?? defaultRunShape();
    return {
      artifactRoot: realRoot,
      adapter: adapter?.record ?? null,
      requiredNodes: shape.requiredNodes,
      artifactByNode: shape.artifactByNode,
      commissioned: adapter?.record.finishLineAssurance === true,
    };
  } catch (err) {
    if (err instanceof AdapterPolicyError) throw new BridgeError('adapter_policy_violation', err.message);
    throw err;
  }
}

/** True when a repeated root/adapter names what is already sealed (compared by resolved path). */
export async function sameSetup(
  env: BridgeEnv,
  sealed: { artifactRoot: string | null; adapter: AdapterRecord | null },
  input: { artifactRoot?: string | undefined; adapterPath?: string | undefined },
): Promise<string[]> {
  const differs: string[] = [];
  if (input.artifactRoot !== undefined) {
    const real = await resolveRoot(input.artifactRoot).catch(() => null);
    if (real !== sealed.artifactRoot) differs.push('artifactRoot');
  }
  if (input.adapterPath !== undefined) {
    const setup = await resolveSetup(env, { ...input, artifactRoot: sealed.artifactRoot ?? undefined }).then(
      (s) => s,
      () => null,
    );
    if (setup?.adapter?.path !== sealed.adapter?.path || setup?.adapter?.sha256 !== sealed.adapter?.sha256) {
      differs.push('adapterPath');
    }
  }
  return differs;
}
