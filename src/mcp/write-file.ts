import { createHash, randomBytes } from 'node:crypto';
import { constants, type FileHandle, lstat, mkdir, open, rename, unlink } from 'node:fs/promises';
import { sep } from 'node:path';
import { artifactPathProblems } from '../contract/index.js';
import { claimArtifact } from '../validators/artifact-root.js';

/**
 * Writes one artifact under a run's real artifact root. The path is agent-supplied: it must pass
 * the contract's path rules, and no component below the root may be a link. Node has no
 * openat()/mkdirat(), so each directory is opened with O_NOFOLLOW|O_DIRECTORY in turn (a missing
 * one is created, then opened the same way, so a link planted in between is refused). The bytes
 * go to a fresh temp file (O_CREAT|O_EXCL|O_NOFOLLOW) in the final directory and are renamed over
 * the target: readers see the old file or the new one, never a torn write. Finally the file is
 * re-opened through the validators' no-link reader and must hash to what was written, so a swap
 * racing the walk cannot put the bytes anywhere the bridge would not look.
 */
export class WriteRefused extends Error {
  override readonly name = 'WriteRefused';
  constructor(readonly problems: string[]) {
    super(problems.join('; '));
  }
}

const O_DIRECTORY = constants.O_DIRECTORY ?? 0;
const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;

const openDir = (path: string): Promise<FileHandle> =>
  open(path, constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW);

function refusal(err: unknown, shown: string): WriteRefused {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ELOOP' || code === 'ENOTDIR' || code === 'EMLINK') {
    return new WriteRefused([`${shown} is a symbolic link or not a directory`]);
  }
  return new WriteRefused([`${shown} cannot be opened (${code ?? 'error'})`]);
}

/** Opens (creating when missing) each directory of `dirs` below `realRoot`, refusing links. */
async function ensureDirectories(realRoot: string, dirs: readonly string[]): Promise<string> {
  let current = realRoot;
  const walked: string[] = [];
  for (const dir of dirs) {
    current = `${current}${sep}${dir}`;
    walked.push(dir);
    const shown = walked.join('/');
    let handle = await openDir(current).catch((err: NodeJS.ErrnoException) => err);
    if (handle instanceof Error && handle.code === 'ENOENT') {
      // mkdir never follows a link at the last component: a dangling link makes it fail EEXIST.
      await mkdir(current, { mode: 0o755 }).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw refusal(err, shown);
      });
      handle = await openDir(current).catch((err: NodeJS.ErrnoException) => err);
    }
    if (handle instanceof Error) throw refusal(handle, shown);
    await handle.close();
  }
  return current;
}

export interface WrittenFile {
  path: string;
  sha256: string;
  size: number;
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
  const dir = await ensureDirectories(realRoot, parts.slice(0, -1));
  const target = `${dir}${sep}${leaf}`;
  const existing = await lstat(target).catch(() => null);
  if (existing !== null && !existing.isFile()) {
    throw new WriteRefused([
      `${relPath} exists and is ${existing.isSymbolicLink() ? 'a symbolic link' : 'not a regular file'}`,
    ]);
  }
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const temp = `${dir}${sep}.harness-write-${randomBytes(12).toString('hex')}.tmp`;
  const handle = await open(
    temp,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW,
    0o644,
  ).catch((err: unknown) => {
    throw refusal(err, parts.slice(0, -1).join('/') || '.');
  });
  try {
    await handle.writeFile(bytes);
    await handle.datasync();
    await handle.close();
    await rename(temp, target);
  } catch (err) {
    await handle.close().catch(() => undefined);
    await unlink(temp).catch(() => undefined);
    throw err;
  }
  const dirHandle = await openDir(dir);
  await dirHandle.sync().catch(() => undefined);
  await dirHandle.close();
  const claim = await claimArtifact(realRoot, relPath).catch((err: Error) => {
    throw new WriteRefused([`${relPath} cannot be re-read after writing: ${err.message}`]);
  });
  if (claim.sha256 !== sha256) throw new WriteRefused([`${relPath} changed while it was written`]);
  return { path: relPath, sha256, size: bytes.length };
}
