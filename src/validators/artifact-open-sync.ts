import { closeSync, constants, fstatSync, lstatSync, openSync, readlinkSync, realpathSync } from 'node:fs';
import { sep } from 'node:path';
import { artifactPathProblems } from '../contract/artifact-path.js';
import { ArtifactError, describeOpenError, O_DIRECTORY, O_NOFOLLOW } from './artifact-root.js';

/**
 * The synchronous twin of `openArtifact`, for worker threads that open, check and hash a batch of
 * artifacts without a libuv round-trip per system call. The rules are the same, step for step:
 * the path is attacker-controlled, so every directory component is opened with
 * O_NOFOLLOW|O_DIRECTORY (a symlink anywhere on the way fails), the leaf with O_NOFOLLOW, the
 * descriptor must be a regular file, and the leaf's realpath must be the literal path under the
 * real root. test/artifacts/artifact-open-parity.test.ts holds the two versions to the same verdicts.
 *
 * A batch passes one `checkedDirs` set to all its opens: a directory component found a real
 * directory is not opened again for the batch's other files (two of the three opens per file of a
 * tree two levels deep). What makes a leaf safe is still checked per file, after it is open: the
 * kernel's name for it (or its realpath) must be the literal path, so a directory swapped for a
 * link since it was checked refuses the file, as a swap between check and open always could.
 */
export interface OpenedSync {
  fd: number;
  size: number;
  mtimeMs: number;
  /**
   * Device, inode, size, and mtime and ctime in nanoseconds, from the one fstat of the opened
   * descriptor (the digest cache's identity, src/workers/digest-cache.ts), and that ctime.
   */
  identity: string;
  ctimeNs: bigint;
}

function openOrThrow(path: string, flags: number, relPath: string): number {
  try {
    return openSync(path, flags);
  } catch (err) {
    throw new ArtifactError(describeOpenError(err as NodeJS.ErrnoException, relPath));
  }
}

/** Linux's name for an open descriptor's file (`/proc/self/fd/N`); null where there is none. */
function kernelPath(fd: number): string | null {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return null;
  }
}

/** Never blocks the event loop of the main thread: call it only inside a worker. */
export function openArtifactSync(realRoot: string, relPath: string, checkedDirs?: Set<string>): OpenedSync {
  const problems = artifactPathProblems(relPath);
  if (problems.length > 0) throw new ArtifactError(problems.join('; '));
  const parts = relPath.split('/');
  let current = realRoot;
  for (const dir of parts.slice(0, -1)) {
    current = `${current}${sep}${dir}`;
    if (checkedDirs?.has(current)) continue;
    closeSync(openOrThrow(current, constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW, relPath));
    checkedDirs?.add(current);
  }
  const leaf = `${realRoot}${sep}${relPath}`;
  const fd = openOrThrow(leaf, constants.O_RDONLY | O_NOFOLLOW | constants.O_NONBLOCK, relPath);
  try {
    const st = fstatSync(fd, { bigint: true });
    if (!st.isFile()) throw new ArtifactError(`${relPath} is not a regular file`);
    if (st.nlink > 1n) throw new ArtifactError(`${relPath} is a hard link (${st.nlink} names)`);
    const opened = {
      fd,
      size: Number(st.size),
      mtimeMs: Number(st.mtimeMs),
      identity: `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`,
      ctimeNs: st.ctimeNs,
    };
    // The kernel's own name for the opened file is its path through real directories, with no
    // link in it: when that is exactly `leaf`, the realpath and lstat checks below would both agree
    // (one system call instead of one per component). Anything else, or no /proc, asks them.
    if (kernelPath(fd) === leaf) return opened;
    let real = '';
    try {
      real = realpathSync.native(leaf);
    } catch {
      // an unresolvable leaf is treated like an escaping one
    }
    if (real !== leaf || !real.startsWith(realRoot + sep)) {
      throw new ArtifactError(`${relPath} escapes the artifact root`);
    }
    // Same inode check as openArtifact: the checked path must still name the opened file.
    let named: { ino: bigint; dev: bigint } | null = null;
    try {
      named = lstatSync(leaf, { bigint: true });
    } catch {
      named = null;
    }
    if (named?.ino !== st.ino || named.dev !== st.dev)
      throw new ArtifactError(`${relPath} changed while it was opened`);
    return opened;
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}
