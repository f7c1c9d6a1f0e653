import { constants } from 'node:fs';
import { lstat, mkdir, open, readdir, rename, rm, rmdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { artifactPathProblems } from '../contract/artifact-path.js';
import { proposalArtifact, type RunEvent } from '../contract/index.js';
import { SourceError } from './client.js';
import type { ReplayInput } from './recorded.js';

/** An event the bridge verifies against the run's artifact root, and records a claim for. */
export function claimsArtifact(event: RunEvent): boolean {
  if (event.type === 'artifact.written') return true;
  return event.type === 'self_heal.pr_proposed' && proposalArtifact(event) !== undefined;
}

/** A bundle exported --with-artifacts that holds bytes: they become the replay run's root. */
export const carriesArtifacts = (input: ReplayInput): boolean =>
  input.contents !== undefined && Object.keys(input.contents).length > 0;

/**
 * Refuses, before anything is posted, an input whose claims would have no root to be verified
 * against: the bridge would refuse the first of them and the replay would stop half-way.
 */
export function refuseUnrootedClaims(input: ReplayInput, rooted: boolean): void {
  if (rooted) return;
  const first = input.events.find((e) => claimsArtifact(e.event));
  if (first === undefined) return;
  throw new SourceError(
    `${first.where} (${first.event.type}) claims an artifact and the replay has no artifact root, nothing was posted: give --artifact-root DIR, or replay a bundle exported --with-artifacts`,
    2,
  );
}

const code = (err: unknown) => (err as NodeJS.ErrnoException).code;

/** Whether `dir` is absent or an empty directory (itself no link), so a bundle's bytes can go there. */
export async function isFreshRoot(dir: string): Promise<boolean> {
  const info = await lstat(dir).catch((err: unknown) => {
    if (code(err) === 'ENOENT') return null;
    throw err;
  });
  if (info === null) return true;
  return info.isDirectory() && (await readdir(dir)).length === 0;
}

/**
 * Writes a bundle's artifact bytes into `root`, directories 0700 and files 0600: `new`, a root
 * this replay makes (its parents made as needed), false when it exists already, made by someone
 * else (another replay racing for the same default root); `empty`, a given root that is an empty
 * directory. The bundle is signed, but its paths are still judged here, before anything is made,
 * as the bridge judges a claim's (relative, no `..`, no absolute), and nothing is written through
 * a link: each directory is made here or must be a plain directory, each file is new (O_EXCL,
 * O_NOFOLLOW). On any failure what this replay made is removed (the root it made, or the entries
 * it made in the empty root), and nothing else, so a refused replay leaves no partial root.
 */
export async function writeArtifacts(
  root: string,
  contents: Record<string, string>,
  into: 'new' | 'empty',
): Promise<boolean> {
  const paths = Object.keys(contents).sort();
  for (const path of paths) {
    const problems = artifactPathProblems(path);
    if (problems.length > 0)
      throw new SourceError(`artifact ${JSON.stringify(path)} cannot be written: ${problems.join('; ')}`, 2);
  }
  if (into === 'new' && !(await makeRoot(root))) return false;
  const made = new Set<string>();
  try {
    for (const path of paths) {
      const top = path.split('/')[0]!;
      if (!made.has(top) && (await lstat(join(root, top)).catch(() => null)) === null) made.add(top);
      await writeOne(root, path, Buffer.from(contents[path]!, 'base64'));
    }
    return true;
  } catch (err) {
    await removeRoot(root, into === 'new' ? null : [...made]);
    if (err instanceof SourceError) throw err;
    throw new SourceError(`cannot write the bundle's artifacts into ${root}: ${(err as Error).message}`, 2);
  }
}

/**
 * Makes `root` itself with a non-recursive mkdir, so exactly one of two replays racing for it
 * owns it (and may remove it): false when it exists already.
 */
async function makeRoot(root: string): Promise<boolean> {
  try {
    await mkdir(dirname(root), { recursive: true, mode: 0o700 });
    await mkdir(root, { mode: 0o700 });
    return true;
  } catch (err) {
    if (code(err) === 'EEXIST') return false;
    throw new SourceError(`cannot write the bundle's artifacts into ${root}: ${(err as Error).message}`, 2);
  }
}

async function writeOne(root: string, path: string, bytes: Buffer): Promise<void> {
  let dir = root;
  for (const part of path.split('/').slice(0, -1)) {
    dir = join(dir, part);
    await mkdir(dir, { mode: 0o700 }).catch((err: unknown) => {
      if (code(err) !== 'EEXIST') throw err;
    });
    if (!(await lstat(dir)).isDirectory())
      throw new SourceError(`artifact ${path} cannot be written: ${part} is not a plain directory`, 2);
  }
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  const handle = await open(join(root, path), flags, 0o600);
  try {
    await handle.writeFile(bytes);
  } finally {
    await handle.close();
  }
}

/**
 * Undoes writeArtifacts: the whole root when it made it (`entries` null), else the entries it
 * made in a root that was empty before.
 */
export async function removeRoot(root: string, entries: string[] | null): Promise<void> {
  if (entries === null) await rm(root, { recursive: true, force: true });
  else for (const entry of entries) await rm(join(root, entry), { recursive: true, force: true });
}

/**
 * Moves a written root to `to` when that is absent: false when it exists. `to` is made first
 * (makeRoot), so the rename replaces only the empty directory this replay just made, never one
 * another replay made for its own bytes.
 */
export async function moveRoot(from: string, to: string): Promise<boolean> {
  if (!(await makeRoot(to))) return false;
  try {
    await rename(from, to);
  } catch (err) {
    await rmdir(to).catch(() => {});
    throw err;
  }
  return true;
}
