import { createHash } from 'node:crypto';
import { lstat } from 'node:fs/promises';
import { posix, sep } from 'node:path';
import {
  IGNORED_FILES_MAX,
  IGNORED_FILES_SCHEMA_ID,
  type IgnoredFiles,
  type Proof,
} from '../contract/artifacts/index.js';
import { ArtifactError, readArtifact } from './artifact-root.js';
import { schemaProblems } from './documents.js';
import type { FinishLineEnv, RunFacts } from './facts.js';
import { ignoredPaths, workingTreeScope } from './git.js';
import { unverifiedRead } from './verified-bytes.js';

/**
 * Post-proof edits to git-ignored files (docs/finish-line-git.md). The post-proof comparison leaves
 * ignored paths out, yet the application loads some of them (`node_modules/dep/index.js` from
 * tracked code, `.env`): edited after the proof, they change what was proven without a tracked
 * change. `harness proof run` records every ignored file outside the artifact root with its lstat
 * identity (type, device, inode, size, mtime and ctime in ns: cheap, no file read, and ctime moves
 * on any write, rename or chmod and cannot be set back by a user), and the comparison lists them
 * again and names each that was added, removed or changed, but for the adapter's
 * `finishLineAssurance.ignoredMayChange` globs (build caches).
 */
export type IgnoredFile = IgnoredFiles['files'][number];

/** The listing a proof at `proofPath` binds: beside it. */
export const ignoredListingPath = (proofPath: string) =>
  posix.join(posix.dirname(proofPath), 'ignored-files.json');

/** A listing of IGNORED_FILES_MAX entries with long paths stays under this. */
const LISTING_MAX_BYTES = 32 * 1024 * 1024;

async function identity(top: string, path: string): Promise<string> {
  const st = await lstat(`${top}${sep}${path.split('/').join(sep)}`, { bigint: true }).catch(() => null);
  if (st === null) return 'absent';
  const type = st.isFile() ? 'f' : st.isSymbolicLink() ? 'l' : 'o';
  return `${type} ${st.dev} ${st.ino} ${st.size} ${st.mtimeNs} ${st.ctimeNs}`;
}

/**
 * Every git-ignored file of the work tree outside the artifact root, sorted by path, each with its
 * identity; `tooMany` past IGNORED_FILES_MAX, null when git cannot answer.
 */
export async function listIgnoredFiles(
  repoRoot: string,
  realRoot: string,
): Promise<IgnoredFile[] | { tooMany: number } | null> {
  const { repo, top, excludeRel } = await workingTreeScope(repoRoot, realRoot);
  if (top === null) return null;
  const paths = await ignoredPaths(repo, excludeRel);
  if (paths === null) return null;
  if (paths.length > IGNORED_FILES_MAX) return { tooMany: paths.length };
  paths.sort();
  const files: IgnoredFile[] = [];
  // In slices, so a large tree does not queue every lstat at once.
  for (let i = 0; i < paths.length; i += 256) {
    const slice = paths.slice(i, i + 256);
    const ids = await Promise.all(slice.map((p) => identity(top, p)));
    slice.forEach((path, j) => {
      files.push({ path, identity: ids[j] as string });
    });
  }
  return files;
}

/** One line the completed-run verdict cache key binds for the ignored files (verdict-inputs.ts). */
export async function ignoredFilesState(repoRoot: string, realRoot: string): Promise<string> {
  const listed = await listIgnoredFiles(repoRoot, realRoot);
  if (listed === null) throw new Error('git cannot list the ignored files');
  const hash = createHash('sha256').update(JSON.stringify(listed));
  return `ignored ${hash.digest('hex')}`;
}

/** The proof's listing, read from the bytes the bridge verified; or the problem. */
async function recordedListing(
  env: FinishLineEnv & { realRoot: string },
  ref: { path: string; sha256: string },
): Promise<IgnoredFile[] | string> {
  let bytes: Buffer;
  try {
    bytes = await readArtifact(env.realRoot, ref.path, LISTING_MAX_BYTES);
  } catch (err) {
    return err instanceof ArtifactError ? err.message : String(err);
  }
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const unverified = unverifiedRead(env.verified, ref.path, sha256);
  if (unverified !== null) return unverified;
  if (sha256 !== ref.sha256) return `${ref.path} is not the listing the proof binds`;
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    return `${ref.path} is not valid JSON`;
  }
  const problems = schemaProblems(ref.path, IGNORED_FILES_SCHEMA_ID, value);
  return problems.length > 0 ? problems.join('; ') : (value as IgnoredFiles).files;
}

/**
 * The ignored files the proof ran with against the work tree now: each added, removed or changed
 * outside the adapter's `ignoredMayChange` globs is named (the first five, then a count). At the
 * `read` stage only the listing the proof binds is checked (evidence bytes): the work tree goes on
 * changing after a completion.
 */
export async function ignoredFilesProblems(
  facts: RunFacts,
  env: FinishLineEnv & { realRoot: string },
  proofPath: string,
  subject: NonNullable<Proof['subject']>,
): Promise<string[]> {
  if (!subject.ignored)
    return [
      `${proofPath} does not bind the ignored files it ran with (subject.ignored); run harness proof run again`,
    ];
  const recorded = await recordedListing(env, subject.ignored);
  if (typeof recorded === 'string')
    return [`the ignored files the proof ran with cannot be read: ${recorded}`];
  if (env.stage === 'read') return [];
  const now = await listIgnoredFiles(env.repoRoot, env.realRoot);
  if (now === null) return ['the ignored files outside the artifact root cannot be listed'];
  if ('tooMany' in now)
    return [`more than ${IGNORED_FILES_MAX} ignored files outside the artifact root (${now.tooMany})`];
  const globs = facts.config.adapter?.ignoredMayChange ?? [];
  // picomatch is loaded only for an adapter that lists globs.
  const mayChange =
    globs.length > 0
      ? (await import('picomatch')).default([...globs], { dot: true })
      : (_path: string) => false;
  const then = new Map(recorded.map((f) => [f.path, f.identity]));
  const changed: string[] = [];
  for (const { path, identity } of now) {
    if (then.get(path) !== identity && !mayChange(path)) changed.push(path);
    then.delete(path);
  }
  for (const path of then.keys()) if (!mayChange(path)) changed.push(path);
  if (changed.length === 0) return [];
  const shown = changed.sort().slice(0, 5).join(', ');
  const more = changed.length > 5 ? `, and ${changed.length - 5} more` : '';
  return [`ignored files changed after proof at ${subject.commit}: ${shown}${more}`];
}
