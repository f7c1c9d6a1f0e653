import { resolve } from 'node:path';
import { DEFAULT_ARTIFACT_BY_NODE, type NodeId } from '../contract/index.js';
import { AdapterPolicyError, adapterRootsFromEnv, resolveAdapter } from '../validators/adapter.js';
import { ArtifactError, resolveRoot } from '../validators/artifact-root.js';
import { UsageError } from './env.js';

/** Shared by the evidence tools: the real artifact root and the artifact paths the adapter configures. */
export async function realArtifactRoot(dir: string): Promise<string> {
  try {
    return await resolveRoot(resolve(dir));
  } catch (err) {
    throw new UsageError(`--artifact-root: ${err instanceof ArtifactError ? err.message : String(err)}`);
  }
}

export function repoRootFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env['HARNESS_REPO_ROOT'] || process.cwd());
}

/**
 * The same adapter resolution the bridge applies at run creation, so the tools compute the
 * evidence bundle over the same node -> artifact map the gate will use.
 */
export async function localArtifactMap(
  realRoot: string,
  adapterPath: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Record<NodeId, string>> {
  try {
    const adapter = await resolveAdapter({
      adapterPath,
      realArtifactRoot: realRoot,
      repoRoot: repoRootFromEnv(env),
      adapterRoots: adapterRootsFromEnv(env),
    });
    return adapter?.artifactByNode ?? { ...DEFAULT_ARTIFACT_BY_NODE };
  } catch (err) {
    if (err instanceof AdapterPolicyError) throw new UsageError(`--adapter-path: ${err.message}`);
    throw err;
  }
}
