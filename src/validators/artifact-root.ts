import { createHash } from 'node:crypto';
import { constants, type FileHandle, lstat, open, realpath } from 'node:fs/promises';
import { isAbsolute, sep } from 'node:path';
import { artifactPathProblems } from '../contract/artifact-path.js';
import type { ArtifactClaim } from '../contract/index.js';

/**
 * A read-only view of a run's artifact root. Artifact paths are attacker-controlled: every
 * component is opened with O_NOFOLLOW semantics (no symlink anywhere on the way), the opened
 * descriptor must be a regular file, and its bytes are read from that descriptor — never by
 * path again — so a file swapped after the check is not the file hashed.
 */
export class ArtifactError extends Error {
  override readonly name = 'ArtifactError';
}

export interface OpenedArtifact {
  handle: FileHandle;
  size: number;
  mtimeMs: number;
}

export const O_DIRECTORY = constants.O_DIRECTORY ?? 0;
export const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;

/** Resolves the real path of an artifact root; it must be absolute and a directory. */
export async function resolveRoot(root: string): Promise<string> {
  if (!isAbsolute(root)) throw new ArtifactError('artifactRoot must be an absolute path');
  let real: string;
  try {
    real = await realpath(root);
  } catch {
    throw new ArtifactError('artifactRoot does not exist');
  }
  const handle = await open(real, constants.O_RDONLY | O_DIRECTORY).catch(() => {
    throw new ArtifactError('artifactRoot is not a directory');
  });
  await handle.close();
  return real;
}

/**
 * Opens `relPath` under `realRoot` refusing links at every component. Node has no openat(), so
 * each directory component is opened with O_NOFOLLOW|O_DIRECTORY in turn (a symlinked directory
 * fails with ELOOP/ENOTDIR), then the leaf with O_NOFOLLOW; finally the leaf's realpath must
 * still sit inside the root and name the same inode as the descriptor.
 */
export async function openArtifact(realRoot: string, relPath: string): Promise<OpenedArtifact> {
  const problems = artifactPathProblems(relPath);
  if (problems.length > 0) throw new ArtifactError(problems.join('; '));
  const parts = relPath.split('/');
  let current = realRoot;
  for (const dir of parts.slice(0, -1)) {
    current = `${current}${sep}${dir}`;
    const h = await open(current, constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW).catch(
      (err: NodeJS.ErrnoException) => {
        throw new ArtifactError(describeOpenError(err, relPath));
      },
    );
    await h.close();
  }
  const leaf = `${realRoot}${sep}${relPath}`;
  const handle = await open(leaf, constants.O_RDONLY | O_NOFOLLOW | constants.O_NONBLOCK).catch(
    (err: NodeJS.ErrnoException) => {
      throw new ArtifactError(describeOpenError(err, relPath));
    },
  );
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new ArtifactError(`${relPath} is not a regular file`);
    // A hard link makes bytes owned outside the root look like a file inside it.
    if (st.nlink > 1) throw new ArtifactError(`${relPath} is a hard link (${st.nlink} names)`);
    const real = await realpath(leaf).catch(() => '');
    if (real !== leaf || !real.startsWith(realRoot + sep)) {
      throw new ArtifactError(`${relPath} escapes the artifact root`);
    }
    // The path checked above must still name the file we opened: a swap between the open and the
    // realpath shows as another inode.
    const named = await lstat(leaf).catch(() => null);
    if (named?.ino !== st.ino || named.dev !== st.dev)
      throw new ArtifactError(`${relPath} changed while it was opened`);
    return { handle, size: st.size, mtimeMs: st.mtimeMs };
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/** The one wording of an open failure, shared with the synchronous twin (artifact-open-sync.ts). */
export function describeOpenError(err: NodeJS.ErrnoException, relPath: string): string {
  switch (err.code) {
    case 'ENOENT':
      return `${relPath} does not exist`;
    case 'ELOOP':
    case 'ENOTDIR':
    case 'EMLINK':
      return `${relPath} is reached through a symbolic link or a non-directory`;
    case 'EISDIR':
      return `${relPath} is not a regular file`;
    default:
      return `${relPath} cannot be opened (${err.code ?? 'error'})`;
  }
}

/** Hashes an opened descriptor from offset 0 (never the path again). */
export async function hashHandle(handle: FileHandle, size: number): Promise<string> {
  const hash = createHash('sha256');
  const chunk = Buffer.allocUnsafe(Math.min(Math.max(size, 1), 1024 * 1024));
  let position = 0;
  for (;;) {
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, position);
    if (bytesRead === 0) break;
    hash.update(chunk.subarray(0, bytesRead));
    position += bytesRead;
  }
  return hash.digest('hex');
}

/** Hasher seam: the server passes one that sends large files to the Piscina pool. */
export type DescriptorHasher = (opened: OpenedArtifact, relPath: string) => Promise<string>;

export const inlineHasher: DescriptorHasher = (opened) => hashHandle(opened.handle, opened.size);

/** The one wording of a file over the artifact ceiling, in the bridge, its pool and the validators. */
export const tooLarge = (relPath: string, size: number, maxBytes: number): string =>
  `${relPath} is ${size} bytes, over the artifact ceiling of ${maxBytes} bytes (HARNESS_ARTIFACT_MAX_BYTES)`;

/** The one wording of a hash abandoned at the pool's time bound. */
export const hashTimedOut = (relPath: string, ms: number): string =>
  `${relPath} could not be hashed within ${ms} ms (HARNESS_REHASH_TIMEOUT_MS)`;

/**
 * Opens, checks and hashes one artifact, returning the journal claim. A file over `maxBytes` is
 * refused by the size of its opened descriptor, before any byte is read (a sparse file of many GiB
 * occupies no disk but takes as long to hash as a full one).
 */
export async function claimArtifact(
  realRoot: string,
  relPath: string,
  hasher: DescriptorHasher = inlineHasher,
  maxBytes = Number.POSITIVE_INFINITY,
): Promise<ArtifactClaim> {
  const opened = await openArtifact(realRoot, relPath);
  try {
    if (opened.size > maxBytes) throw new ArtifactError(tooLarge(relPath, opened.size, maxBytes));
    const sha256 = await hasher(opened, relPath);
    return { path: relPath, sha256, size: opened.size, mtimeMs: opened.mtimeMs };
  } finally {
    await opened.handle.close();
  }
}

/** Reads a small artifact's bytes through the same no-link rules (for JSON documents). */
export async function readArtifact(
  realRoot: string,
  relPath: string,
  maxBytes = 8 * 1024 * 1024,
): Promise<Buffer> {
  const opened = await openArtifact(realRoot, relPath);
  try {
    if (opened.size > maxBytes) throw new ArtifactError(`${relPath} is larger than ${maxBytes} bytes`);
    const buf = Buffer.alloc(opened.size);
    let position = 0;
    while (position < opened.size) {
      const { bytesRead } = await opened.handle.read(buf, position, opened.size - position, position);
      if (bytesRead === 0) break;
      position += bytesRead;
    }
    return buf.subarray(0, position);
  } finally {
    await opened.handle.close();
  }
}
