import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { DEFAULT_ARTIFACT_BY_NODE, type NodeId } from '../contract/index.js';
import {
  AdapterPolicyError,
  adapterRootsFromEnv,
  type ResolvedAdapter,
  resolveAdapter,
} from '../validators/adapter.js';
import { ArtifactError, resolveRoot } from '../validators/artifact-root.js';
import { readCommittedAdapter } from '../validators/committed-adapter.js';
import { pinnedRepository } from '../validators/git-isolation.js';
import { UsageError } from './env.js';

/** Shared by the evidence tools: the real artifact root and the artifact paths the adapter configures. */
export async function realArtifactRoot(dir: string): Promise<string> {
  try {
    return await resolveRoot(resolve(dir));
  } catch (err) {
    throw new UsageError(`--artifact-root: ${err instanceof ArtifactError ? err.message : String(err)}`);
  }
}

/**
 * Where `harness replay` writes a bundle's artifacts when no --artifact-root is given: one new
 * directory per replay run under ~/.harness/replays, beside the client's other files (outbox,
 * connector state, dev credentials).
 */
export function replaysDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env['HOME'] || homedir(), '.harness', 'replays');
}

export function repoRootFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env['HARNESS_REPO_ROOT'] || process.cwd());
}

/**
 * The same adapter resolution the bridge applies at run creation, so the tools compute the
 * evidence bundle over the same node -> artifact map the gate will use: the run's own adapter
 * (`--adapter-path`, or `project-adapter.json` in the artifact root), else the repository's
 * committed one (docs/finish-line.md "Adapters"), as HEAD holds it now (the bridge read it at its
 * start), else the defaults. Outside any git repository there is no committed adapter.
 */
export async function localArtifactMap(
  realRoot: string,
  adapterPath: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Record<NodeId, string>> {
  const repoRoot = repoRootFromEnv(env);
  let own: ResolvedAdapter | null;
  try {
    own = await resolveAdapter({
      adapterPath,
      realArtifactRoot: realRoot,
      repoRoot,
      adapterRoots: adapterRootsFromEnv(env),
    });
  } catch (err) {
    if (err instanceof AdapterPolicyError) throw new UsageError(`--adapter-path: ${err.message}`);
    throw err;
  }
  if (own) return own.artifactByNode;
  if ((await pinnedRepository(repoRoot)) === null) return { ...DEFAULT_ARTIFACT_BY_NODE };
  try {
    return (await readCommittedAdapter(repoRoot))?.artifactByNode ?? { ...DEFAULT_ARTIFACT_BY_NODE };
  } catch (err) {
    throw new UsageError(`HARNESS_REPO_ROOT's committed adapter: ${(err as Error).message}`);
  }
}
