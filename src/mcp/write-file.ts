import { createHash, randomBytes } from 'node:crypto';
import { constants, type FileHandle, lstat, mkdir, open, readlink, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { artifactPathProblems } from '../contract/index.js';
import { claimArtifact } from '../validators/artifact-root.js';

/**
 * Writes one artifact under a run's real artifact root. The path is agent-supplied: it must pass
 * the contract's path rules, and no component below the root may be a link. The agent can swap
 * any directory below the root for a link at any moment, so after the root nothing is reached by
 * path: Node has no openat()/mkdirat()/renameat(), and Linux's `/proc/self/fd/<fd>/<name>` gives
 * their semantics (the kernel walks from the directory the descriptor holds, whatever now sits at
 * its old path). Each directory is opened with O_NOFOLLOW|O_DIRECTORY relative to its parent's
 * descriptor (a missing one is created there, then opened the same way); the bytes go to a fresh
 * temp file (O_CREAT|O_EXCL|O_NOFOLLOW) in the held final directory and are renamed over the
 * target inside it: readers see the old file or the new one, never a torn write. The held
 * directory must still sit at its path under the root before the temp file is created and after
 * the rename (a directory moved away in between is refused and what was written is removed), so
 * the bytes never stay anywhere but under the root. Finally the file is re-opened through the
 * validators' no-link reader and must hash to what was written.
 */
export class WriteRefused extends Error {
  override readonly name = 'WriteRefused';
  constructor(readonly problems: string[]) {
    super(problems.join('; '));
  }
}

const O_DIRECTORY = constants.O_DIRECTORY ?? 0;
const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const FD_DIR = '/proc/self/fd';

const openDir = (path: string): Promise<FileHandle> =>
  open(path, constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW);

/** `name` inside the directory `dir` holds, resolved from the descriptor, never by its path. */
const at = (dir: FileHandle, name: string): string => `${FD_DIR}/${dir.fd}/${name}`;

function refusal(err: unknown, shown: string): WriteRefused {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ELOOP' || code === 'ENOTDIR' || code === 'EMLINK') {
    return new WriteRefused([`${shown} is a symbolic link or not a directory`]);
  }
  return new WriteRefused([`${shown} cannot be opened (${code ?? 'error'})`]);
}

/** Refuses unless the directory `dir` holds still sits at `path` (a link-free, canonical path). */
async function stillAt(dir: FileHandle, path: string, shown: string): Promise<void> {
  const now = await readlink(`${FD_DIR}/${dir.fd}`).catch((err: NodeJS.ErrnoException) => err);
  if (now instanceof Error) {
    throw new WriteRefused([`${shown} cannot be located through ${FD_DIR} (${now.code ?? 'error'})`]);
  }
  if (now !== path) throw new WriteRefused([`${shown} moved while the artifact was written`]);
}

/** Opens the root, then (creating when missing, if `create`) each of `dirs` below it, refusing links. */
async function openDirectories(
  realRoot: string,
  dirs: readonly string[],
  create = true,
): Promise<FileHandle> {
  let current = await openDir(realRoot).catch((err: unknown) => {
    throw refusal(err, 'the artifact root');
  });
  try {
    await stillAt(current, realRoot, 'the artifact root');
    const walked: string[] = [];
    for (const dir of dirs) {
      walked.push(dir);
      const shown = walked.join('/');
      let child = await openDir(at(current, dir)).catch((err: NodeJS.ErrnoException) => err);
      if (child instanceof Error && child.code === 'ENOENT' && create) {
        // mkdir never follows a link at the last component: a dangling link makes it fail EEXIST.
        await mkdir(at(current, dir), { mode: 0o755 }).catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'EEXIST') throw refusal(err, shown);
        });
        child = await openDir(at(current, dir)).catch((err: NodeJS.ErrnoException) => err);
      }
      if (child instanceof Error) throw refusal(child, shown);
      await current.close();
      current = child;
    }
    return current;
  } catch (err) {
    await current.close().catch(() => undefined);
    throw err;
  }
}

/** Unlinks `path` only while it is still the file with inode `ino` (ours, not a replacement). */
async function removeOurs(path: string, ino: number): Promise<void> {
  const st = await lstat(path).catch(() => null);
  if (st !== null && st.ino === ino) await unlink(path).catch(() => undefined);
}

export interface WrittenFile {
  path: string;
  sha256: string;
  size: number;
  /** The written file's inode: removeWrittenFile takes nothing but that file. */
  ino: number;
}

export async function writeArtifactFile(
  realRoot: string,
  relPath: string,
  bytes: Buffer,
): Promise<WrittenFile> {
  const problems = artifactPathProblems(relPath);
  if (problems.length > 0) throw new WriteRefused(problems);
  const parts = relPath.split('/');
  const leaf = parts[parts.length - 1] as string;
  const dirs = parts.slice(0, -1);
  const dirPath = join(realRoot, ...dirs);
  const shownDir = dirs.join('/') || 'the artifact root';
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const dir = await openDirectories(realRoot, dirs);
  let ino: number | null = null;
  try {
    const existing = await lstat(at(dir, leaf)).catch(() => null);
    if (existing !== null && !existing.isFile()) {
      throw new WriteRefused([
        `${relPath} exists and is ${existing.isSymbolicLink() ? 'a symbolic link' : 'not a regular file'}`,
      ]);
    }
    await stillAt(dir, dirPath, shownDir);
    const temp = `.harness-write-${randomBytes(12).toString('hex')}.tmp`;
    const handle = await open(
      at(dir, temp),
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW,
      0o644,
    ).catch((err: unknown) => {
      throw refusal(err, shownDir);
    });
    try {
      ino = (await handle.stat()).ino;
      await handle.writeFile(bytes);
      await handle.datasync();
      await handle.close();
      await rename(at(dir, temp), at(dir, leaf));
      await dir.sync().catch(() => undefined);
      await stillAt(dir, dirPath, shownDir);
    } catch (err) {
      // Whatever of ours sits in the held directory goes, wherever that directory now is.
      await handle.close().catch(() => undefined);
      await unlink(at(dir, temp)).catch(() => undefined);
      if (ino !== null) await removeOurs(at(dir, leaf), ino);
      throw err;
    }
  } finally {
    await dir.close();
  }
  const claim = await claimArtifact(realRoot, relPath).catch((err: Error) => {
    throw new WriteRefused([`${relPath} cannot be re-read after writing: ${err.message}`]);
  });
  if (claim.sha256 !== sha256) throw new WriteRefused([`${relPath} changed while it was written`]);
  return { path: relPath, sha256, size: bytes.length, ino: ino as number };
}

/**
 * Removes a file `writeArtifactFile` made that nothing claims, reached the same way (no link at
 * any component, nothing by path below the root) and only while it is still that file: the same
 * inode holding the same bytes. Anything else at the path is left as it is.
 */
export async function removeWrittenFile(realRoot: string, written: WrittenFile): Promise<void> {
  const parts = written.path.split('/');
  const leaf = parts.pop() as string;
  const dir = await openDirectories(realRoot, parts, false).catch(() => null);
  if (dir === null) return;
  try {
    // O_NONBLOCK: a FIFO put in its place must not hold the call waiting for a writer.
    const flags = constants.O_RDONLY | O_NOFOLLOW | constants.O_NONBLOCK;
    const handle = await open(at(dir, leaf), flags).catch(() => null);
    if (handle === null) return;
    try {
      const st = await handle.stat();
      if (!st.isFile() || st.ino !== written.ino) return;
      const now = createHash('sha256')
        .update(await handle.readFile())
        .digest('hex');
      if (now === written.sha256) await unlink(at(dir, leaf)).catch(() => undefined);
    } finally {
      await handle.close();
    }
  } finally {
    await dir.close();
  }
}
