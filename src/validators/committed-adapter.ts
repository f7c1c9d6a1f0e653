import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { CommittedAdapter } from '../contract/index.js';
import {
  ADAPTER_FILE,
  ADAPTER_MAX_BYTES,
  AdapterPolicyError,
  parseAdapter,
  type ResolvedAdapter,
} from './adapter.js';
import { committedEntry, headCommit, showCommitted } from './git.js';
import { pinnedRepository } from './git-isolation.js';

/**
 * The repository's own adapter (issue 28): the pack committed at HEAD of HARNESS_REPO_ROOT, which
 * the bridge applies to every run that names no adapter and holds every named one to (a run may
 * not name an adapter weaker than it). The working tree is the agent's to edit, so only the
 * committed bytes count, read with the validators' isolated git (git.ts): an edited, deleted or
 * replaced working copy changes nothing, and neither does a `.harness-pack` directory created or
 * removed in the working tree.
 */
export const PACK_ADAPTER_PATH = `.harness-pack/${ADAPTER_FILE}`;

const REGULAR_FILE_MODES = new Set(['100644', '100755']);

/**
 * Reads the committed adapter: `.harness-pack/project-adapter.json` when HEAD's tree holds a
 * `.harness-pack` directory, else `project-adapter.json` at the top level (one path, never a
 * fallback to the other, as with the review-trust store). Null when that path holds nothing. A
 * committed link, submodule or directory there, an adapter over ADAPTER_MAX_BYTES or one that
 * does not parse throws AdapterPolicyError: a pack the bridge cannot apply must stop it rather
 * than leave runs uncommissioned. Throws a plain Error when git cannot answer.
 */
export async function readCommittedAdapter(repoRoot: string): Promise<ResolvedAdapter | null> {
  const top = await pinnedRepository(repoRoot);
  const commit = top === null ? null : await headCommit(repoRoot);
  if (top === null || commit === null) throw new Error('HARNESS_REPO_ROOT has no commit at HEAD');
  const pack = await committedEntry(repoRoot, commit, '.harness-pack');
  const path = pack?.type === 'tree' ? PACK_ADAPTER_PATH : ADAPTER_FILE;
  const entry = await committedEntry(repoRoot, commit, path);
  if (entry === null) return null;
  if (entry.type !== 'blob' || !REGULAR_FILE_MODES.has(entry.mode)) {
    throw new AdapterPolicyError(`${path} at HEAD is not a regular file (mode ${entry.mode})`);
  }
  const bytes = await showCommitted(repoRoot, path, commit);
  if (bytes === null) throw new Error(`git cannot read ${path} at HEAD`);
  if (bytes.length > ADAPTER_MAX_BYTES) {
    throw new AdapterPolicyError(`${path} at HEAD is larger than ${ADAPTER_MAX_BYTES} bytes`);
  }
  try {
    return parseAdapter(bytes, {
      rootKind: 'repository',
      path: join(top, ...path.split('/')),
      committed: { repoRoot, commit, path },
    });
  } catch (err) {
    if (err instanceof AdapterPolicyError) throw new AdapterPolicyError(`${path} at HEAD: ${err.message}`);
    throw err;
  }
}

/**
 * Digests of committed adapters by repository, commit and path. With replace objects off a blob
 * at a commit is fixed by the commit's name, so a digest once read never changes; an absent one is
 * not kept (the object may be fetched back).
 */
const digests = new Map<string, string>();
const DIGESTS_MAX = 256;

/**
 * The SHA-256 of the adapter a run sealed from its repository, as that commit still holds it, or
 * null when git cannot show it (history rewritten and collected, another repository): what a
 * completed-run read compares with the sealed digest. Later commits that change the pack do not
 * change it, so a run stays judged under the adapter it was sealed with.
 */
export async function committedAdapterDigest(where: CommittedAdapter): Promise<string | null> {
  const key = `${where.repoRoot}\0${where.commit}\0${where.path}`;
  const known = digests.get(key);
  if (known !== undefined) return known;
  const bytes = await showCommitted(where.repoRoot, where.path, where.commit).catch(() => null);
  if (bytes === null) return null;
  const digest = createHash('sha256').update(bytes).digest('hex');
  if (digests.size >= DIGESTS_MAX) digests.delete(digests.keys().next().value as string);
  digests.set(key, digest);
  return digest;
}
