import { createHash } from 'node:crypto';
import { lstat } from 'node:fs/promises';
import { sep } from 'node:path';
import { artifactPathProblems, BIND_BY_NAME_MAX, COMMIT_NAMES_MAX } from '../contract/index.js';
import type { OpenRun } from '../storage/types.js';
import { validatorInputs } from '../validators/finish-line.js';
import {
  commitExists,
  committedObjectId,
  isAncestor,
  statusChangedPaths,
  workingTreeListing,
  workingTreeScope,
} from '../validators/git.js';
import { ignoredFilesState } from '../validators/ignored-files.js';
import type { ValidatorInputs } from '../validators/inputs.js';
import { trustStorePath } from '../validators/trust-store.js';
import type { DocumentRefsReader } from '../workers/document-refs.js';
import type { HashPool } from '../workers/pool.js';
import type { StatInventory } from '../workers/stat-inventory.js';
import { factsOf } from './completion.js';

/**
 * The part of the completed-run verdict cache key that stands for the artifact root: exactly what
 * the validator sequence of this run reads there (the rules' declarations, src/validators/inputs.ts).
 *
 * - When no rule enumerates the root (a run that is not commissioned): every file a rule reads by
 *   name, and every artifact path named inside a document a rule opens references from, is bound
 *   by its lstat identity (type, size, mtime and ctime in ns, inode, device, link count, mode,
 *   owner) or by its absence. Any write, rename, link or deletion moves the leaf's ctime, which no
 *   user can set back, so an equal identity means the bytes a validator opens are the bytes it
 *   opened before. Each directory on the way (and the root itself) is bound by what a by-name open
 *   depends on: that it is still the same directory (type, inode, device, mode, owner), since a
 *   component swapped for a link makes the open fail. Files added elsewhere are not inputs and do
 *   not miss the cache.
 * - A run whose rules enumerate the whole root (commissioned runs: the review-signature
 *   inventory) binds the root's lstat inventory instead (src/workers/stat-inventory.ts), walked in
 *   a pool thread: one lstat per entry. It covers every path a by-name read could open (their
 *   ctime moves on any change of content, links or mode), and the review names every file of its
 *   inventory, so binding those one by one as well would only repeat the walk on the main thread.
 *
 * - What the rules read from the git repository (HARNESS_REPO_ROOT) at the `read` stage, only
 *   for runs whose rules declare it (repositoryState): the trust store's object name at HEAD and
 *   the commits the RCA and proof name. The working tree is compared with the proof only at the
 *   gate, so no read binds it: a commit or an edit that leaves those alone is a cache hit.
 *
 * Identities are taken before the validators run, and a document's references are read after its
 * own identity was taken, so a change at any later moment shows as another key. Null (never
 * answered from the cache) when an identity or the repository state cannot be taken, or the
 * inventory cannot be walked. A run whose documents name more than BIND_BY_NAME_MAX paths binds
 * the root's lstat inventory, like a run whose rules enumerate the root.
 */

export interface BoundFiles {
  /** `<path> <identity>` lines, sorted: a path read by name, or a directory on the way to one. */
  lines: string[];
  /** Every relative path bound ('' is the root), for tests. */
  paths: string[];
}

type Kind = 'leaf' | 'dir';

/** The root ('') and each directory on the way to `rel`. */
function componentsOf(rel: string): string[] {
  const parts = rel.split('/');
  return ['', ...parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join('/'))];
}

async function identity(root: string, rel: string, kind: Kind): Promise<string> {
  const st = await lstat(rel === '' ? root : `${root}${sep}${rel.split('/').join(sep)}`, {
    bigint: true,
  }).catch((err: NodeJS.ErrnoException) => {
    // Absent (or under a non-directory) is a state a validator sees; anything else (EACCES on a
    // component we bind, EIO) may not be stable, so there is no key.
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return err.code;
    throw err;
  });
  if (typeof st === 'string') return st;
  const type = st.isFile() ? 'f' : st.isDirectory() ? 'd' : st.isSymbolicLink() ? 'l' : 'o';
  const who = `${st.ino} ${st.dev} ${st.mode} ${st.uid} ${st.gid}`;
  return kind === 'dir'
    ? `${type} ${who}`
    : `${type} ${who} ${st.size} ${st.mtimeNs} ${st.ctimeNs} ${st.nlink}`;
}

/** Binds `paths` and every directory on the way; a path no rule would open is bound as text. */
async function bind(root: string, paths: readonly string[], into: Map<string, Promise<string>>) {
  for (const rel of paths) {
    if (artifactPathProblems(rel).length > 0) {
      into.set(`${JSON.stringify(rel)} leaf`, Promise.resolve('invalid'));
      continue;
    }
    for (const dir of componentsOf(rel)) {
      const k = `${JSON.stringify(dir)} dir`;
      if (!into.has(k)) into.set(k, identity(root, dir, 'dir'));
    }
    const k = `${JSON.stringify(rel)} leaf`;
    if (!into.has(k)) into.set(k, identity(root, rel, 'leaf'));
  }
  await Promise.all(into.values());
}

/** The documents name more than BIND_BY_NAME_MAX paths: the root's lstat inventory binds them. */
export class TooManyToBind extends RangeError {
  constructor() {
    super(`the documents name more than ${BIND_BY_NAME_MAX} paths to bind one by one`);
  }
}

/**
 * The identities of every file the rules read by name, and of every path their documents name.
 * The documents are read by `refs`: the server passes the pool's reader, so none is parsed on the
 * main thread.
 */
export async function boundFiles(
  root: string,
  inputs: ValidatorInputs,
  refs: DocumentRefsReader,
): Promise<BoundFiles> {
  const bound = new Map<string, Promise<string>>();
  await bind(root, inputs.files, bound);
  // Read after the documents' identities were taken: a later change to one moves its identity.
  const named = new Set<string>();
  for (const { paths } of await refs(root, inputs.documents)) {
    if (paths === null || named.size + paths.length > BIND_BY_NAME_MAX) throw new TooManyToBind();
    for (const p of paths) named.add(p);
  }
  await bind(root, [...named].sort(), bound);
  const lines: string[] = [];
  const paths = new Set<string>();
  for (const [k, v] of bound) {
    lines.push(`${k} ${await v}`);
    paths.add(JSON.parse(k.slice(0, k.lastIndexOf(' '))) as string);
  }
  return { lines: lines.sort(), paths: [...paths].sort() };
}

type RepositoryInputs = ValidatorInputs['repository'];

/**
 * The trust store the review-signature rule would read (`.harness-pack` chooses the path), by its
 * object name at HEAD: the blob `git cat-file blob HEAD:<path>` prints. A commit that leaves it
 * alone keeps the name; one that revokes a key or replaces the store does not.
 */
async function trustStoreState(repoRoot: string): Promise<string[]> {
  const path = await trustStorePath(repoRoot);
  return [`trust-store ${JSON.stringify(path)} ${(await committedObjectId(repoRoot, path)) ?? 'absent'}`];
}

/**
 * Bound only when a rule declares a working-tree read at the `read` stage, which no rule does
 * (post-proof-mutation compares the working tree at the gate only); kept so that a declaration
 * added later is bound rather than answered from a stale verdict.
 *
 * What changesSince answers for any commit: the status names HEAD, every index change against it
 * (with both object names); every path it reports changed in the working tree, and every path
 * uncomparedPaths lists (untracked under the committed ignore rules only, ignored untracked
 * `.gitignore` files, index entries flagged skip-worktree or assume-unchanged), is bound by its
 * lstat identity, since a further edit of a file already listed leaves the listing as it was.
 * Every other path holds HEAD's bytes. The git-ignored files outside the artifact root are bound by
 * their listing with identities (ignored-files.ts), as the post-proof comparison reads them.
 */
async function workingTreeState(repoRoot: string, realRoot: string): Promise<string[]> {
  const scope = await workingTreeScope(repoRoot, realRoot);
  const { repo, top } = scope;
  if (top === null) throw new Error('HARNESS_REPO_ROOT is not in a git work tree');
  const { status, uncompared } = await workingTreeListing(repo, scope);
  const changed = [...new Set([...statusChangedPaths(status), ...uncompared])].sort();
  if (changed.length > BIND_BY_NAME_MAX) throw new RangeError('too many working-tree changes to bind');
  const [lines, ignored] = await Promise.all([
    Promise.all(changed.map(async (p) => `changed ${JSON.stringify(p)} ${await identity(top, p, 'leaf')}`)),
    ignoredFilesState(repoRoot, realRoot),
  ]);
  return [`status ${createHash('sha256').update(status).digest('hex')}`, ...lines, ignored];
}

/**
 * The answers git gives for the full commit names in each document (read after its identity was
 * taken): whether each names a commit, and for two names of one document whether the first is an
 * ancestor of the second, exactly the queries the rules make.
 */
async function commitsState(
  repoRoot: string,
  root: string,
  documents: readonly string[],
  refs: DocumentRefsReader,
) {
  // At most COMMIT_NAMES_MAX + 1 names per document: one more than the bound already refuses.
  const perDocument = (await refs(root, documents)).map((r) => r.commits);
  const names = [...new Set(perDocument.flat())].sort();
  if (names.length > COMMIT_NAMES_MAX) throw new RangeError('the documents name too many commits to bind');
  const present = new Map(
    await Promise.all(names.map(async (n) => [n, await commitExists(repoRoot, n)] as const)),
  );
  const pairs = new Set<string>();
  for (const list of perDocument)
    for (const a of list)
      for (const b of list) if (a !== b && present.get(a) && present.get(b)) pairs.add(`${a} ${b}`);
  const lines = names.map((n) => `commit ${n} ${present.get(n) ? 'present' : 'absent'}`);
  const ancestry = await Promise.all(
    [...pairs].map(async (p) => {
      const [a, b] = p.split(' ') as [string, string];
      return `ancestor ${p} ${await isAncestor(repoRoot, a, b)}`;
    }),
  );
  return [...lines, ...ancestry];
}

/**
 * The repository state the run's rules read, as their declarations say: nothing (no git run) for a
 * run whose rules make no repository read, nor for commits when the declared documents are absent.
 * Throws when git cannot answer, so the caller has no key.
 */
export async function repositoryState(
  repoRoot: string,
  root: string,
  reads: RepositoryInputs,
  refs: DocumentRefsReader,
  afterRootBound: Promise<unknown> = Promise.resolve(),
): Promise<string[]> {
  const parts = await Promise.all([
    reads.trustStore ? trustStoreState(repoRoot) : [],
    reads.workingTree ? workingTreeState(repoRoot, root) : [],
    reads.commitsNamedIn.length > 0
      ? afterRootBound.then(() => commitsState(repoRoot, root, reads.commitsNamedIn, refs))
      : [],
  ]);
  return parts.flat().sort();
}

/** The digest the verdict cache key takes for what the run's rules read, or null (no cache). */
export async function verdictInputsDigest(
  pool: HashPool,
  run: OpenRun,
  repoRoot: string,
  /** The root's lstat inventory when the caller walked it already. */
  walk?: Promise<StatInventory | null>,
): Promise<string | null> {
  const root = run.config.artifactRoot;
  if (root === null) return 'no-artifact-root';
  const inputs = validatorInputs(factsOf(run), 'read');
  const hash = createHash('sha256').update('harness.verdict-inputs.v2\n');
  const refs: DocumentRefsReader = (r, paths) => pool.documentRefs(r, paths);
  // The documents naming commits are read once the root's identities are taken.
  const walked = () =>
    (walk ?? pool.statInventory(root)).then((inventory) =>
      inventory === null ? null : [`inventory ${inventory.digest}`],
    );
  // The inventory covers every path a by-name read could open: past BIND_BY_NAME_MAX named paths
  // it is one walk in a pool thread instead of an lstat per path and directory on this one.
  const rootBound = inputs.enumeratesRoot
    ? walked()
    : boundFiles(root, inputs, refs).then(
        (b) => b.lines.map((l) => `by-name ${l}`),
        (err: unknown) => (err instanceof TooManyToBind ? walked() : Promise.reject(err)),
      );
  const [rootLines, repository] = await Promise.all([
    rootBound,
    repositoryState(repoRoot, root, inputs.repository, refs, rootBound),
  ]);
  if (rootLines === null) return null;
  for (const line of rootLines) hash.update(`${line}\n`);
  for (const line of repository) hash.update(`repository ${line}\n`);
  return hash.digest('hex');
}
