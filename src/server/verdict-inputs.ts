import { createHash } from 'node:crypto';
import { lstat } from 'node:fs/promises';
import { sep } from 'node:path';
import { artifactPathProblems } from '../contract/index.js';
import type { OpenRun } from '../storage/run-files.js';
import { loadJson } from '../validators/documents.js';
import { validatorInputs } from '../validators/finish-line.js';
import type { ValidatorInputs } from '../validators/inputs.js';
import { artifactRefPaths } from '../validators/json-scan.js';
import type { HashPool } from '../workers/pool.js';
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
 * Identities are taken before the validators run, and a document's references are read after its
 * own identity was taken, so a change at any later moment shows as another key. Null (never
 * answered from the cache) when an identity cannot be taken, the documents name more than
 * NAMED_PATHS_MAX paths, or the inventory cannot be walked.
 */
export const NAMED_PATHS_MAX = 10_000;

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

/** The identities of every file the rules read by name, and of every path their documents name. */
export async function boundFiles(root: string, inputs: ValidatorInputs): Promise<BoundFiles> {
  const bound = new Map<string, Promise<string>>();
  await bind(root, inputs.files, bound);
  // Read after the documents' identities were taken: a later change to one moves its identity.
  const named = new Set<string>();
  for (const doc of inputs.documents) {
    const loaded = await loadJson(root, doc);
    if (loaded.kind === 'ok') for (const p of artifactRefPaths(loaded.value)) named.add(p);
  }
  if (named.size > NAMED_PATHS_MAX) throw new RangeError('the documents name too many paths to bind');
  await bind(root, [...named].sort(), bound);
  const lines: string[] = [];
  const paths = new Set<string>();
  for (const [k, v] of bound) {
    lines.push(`${k} ${await v}`);
    paths.add(JSON.parse(k.slice(0, k.lastIndexOf(' '))) as string);
  }
  return { lines: lines.sort(), paths: [...paths].sort() };
}

/** The digest the verdict cache key takes for the run's artifact root, or null (no cache). */
export async function verdictInputsDigest(pool: HashPool, run: OpenRun): Promise<string | null> {
  const root = run.config.artifactRoot;
  if (root === null) return 'no-artifact-root';
  const inputs = validatorInputs(factsOf(run));
  const hash = createHash('sha256').update('harness.verdict-inputs.v1\n');
  if (inputs.enumeratesRoot) {
    const inventory = await pool.statInventory(root);
    return inventory === null ? null : hash.update(`inventory ${inventory}\n`).digest('hex');
  }
  for (const line of (await boundFiles(root, inputs)).lines) hash.update(`by-name ${line}\n`);
  return hash.digest('hex');
}
