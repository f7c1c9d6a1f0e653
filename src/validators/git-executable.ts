import { accessSync, constants, realpathSync, statSync } from 'node:fs';
import { delimiter, dirname, isAbsolute, join } from 'node:path';

/**
 * Which git the bridge runs. Threat: the validators ask git every repository question the
 * finish line depends on (post-proof mutation, the RCA's commits, the trust store at HEAD), and
 * git runs as a child of the bridge. PATH on a developer machine often starts with directories
 * the user writes (`~/.local/bin`, `~/.cargo/bin`, version-manager shims), so an agent running as
 * that user could put a `git` there that answers whatever it likes. The bridge therefore takes
 * git only from a place its user cannot write, resolves it once, runs it by that absolute path,
 * and gives git and the validator children a fixed PATH rather than the caller's.
 */
export class GitExecutableError extends Error {
  override readonly name = 'GitExecutableError';
}

export interface ResolvedGit {
  /** The real path of the git every query runs. */
  path: string;
  /** PATH candidates passed over, each with its reason (empty with HARNESS_GIT). */
  skipped: string[];
}

function writableBy(path: string): boolean {
  try {
    accessSync(path, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Why `real` (a real path: no link left in it) is not trusted, or null when it is. It and every
 * directory above it, up to `/`, must be owned by root or the bridge's user, writable by neither
 * group nor others, and not writable by the bridge's user. A bridge running as root can write
 * everywhere, so for root the last condition cannot hold and is not asked: root-owned and not
 * group- or world-writable is then the whole rule.
 */
function untrustedBecause(real: string, uid: number): string | null {
  const file = statSync(real);
  if (!file.isFile()) return `${real} is not a regular file`;
  try {
    accessSync(real, constants.X_OK);
  } catch {
    return `${real} is not executable by this user`;
  }
  for (let path = real; ; path = dirname(path)) {
    const st = path === real ? file : statSync(path);
    if (st.uid !== 0 && st.uid !== uid) return `${path} is owned by another user (uid ${st.uid})`;
    if ((st.mode & 0o022) !== 0) return `${path} is group- or world-writable`;
    if (uid !== 0 && writableBy(path)) return `${path} is writable by this user`;
    if (dirname(path) === path) return null;
  }
}

/** The real path of `candidate` and why it is not trusted (null when it is), or null if absent. */
function judge(candidate: string, uid: number): { real: string; problem: string | null } | null {
  let real: string;
  try {
    real = realpathSync(candidate);
  } catch {
    return null;
  }
  try {
    return { real, problem: untrustedBecause(real, uid) };
  } catch (err) {
    return { real, problem: `${real} cannot be checked (${(err as NodeJS.ErrnoException).code ?? 'error'})` };
  }
}

/**
 * HARNESS_GIT when set (an absolute path, checked by the rule above), else the first `git` on
 * PATH that the rule trusts; an untrusted one is passed over, never run. Throws with one line when
 * there is none.
 */
export function resolveGit(env: NodeJS.ProcessEnv, uid: number = process.getuid?.() ?? -1): ResolvedGit {
  const chosen = env['HARNESS_GIT'];
  if (chosen !== undefined && chosen !== '') {
    if (!isAbsolute(chosen)) throw new GitExecutableError('HARNESS_GIT must be an absolute path');
    const judged = judge(chosen, uid);
    if (judged === null) throw new GitExecutableError(`HARNESS_GIT ${chosen} does not exist`);
    if (judged.problem !== null)
      throw new GitExecutableError(`HARNESS_GIT ${chosen} cannot be trusted: ${judged.problem}`);
    return { path: judged.real, skipped: [] };
  }
  const skipped: string[] = [];
  // No PATH at all: the search execvp makes then.
  for (const dir of (env['PATH'] ?? '/usr/bin:/bin').split(delimiter)) {
    // A relative entry (or an empty one, the current directory) names wherever the bridge starts.
    if (!isAbsolute(dir)) continue;
    const candidate = join(dir, 'git');
    const judged = judge(candidate, uid);
    if (judged === null) continue;
    if (judged.problem === null) return { path: judged.real, skipped };
    skipped.push(`${candidate} (${judged.problem})`);
  }
  const why = skipped.length === 0 ? 'there is none' : `passed over ${skipped.join(', ')}`;
  throw new GitExecutableError(
    `no git on PATH is in a directory this user cannot write (${why}); install git in one, or set HARNESS_GIT to it`,
  );
}

let current: string | null = null;

/**
 * The git every query runs: the one `useGit` named (the bridge at startup, the validator child
 * from its parent), else the one this process's environment resolves to, resolved once.
 */
export function gitExecutable(): string {
  current ??= resolveGit(process.env).path;
  return current;
}

/** Names the git to run from now on: a path `resolveGit` returned (or, in a test, one it chose). */
export function useGit(path: string): void {
  current = path;
}

/** The fixed PATH of git and the validator children: git's own directory, then /usr/bin and /bin. */
export function childPath(): string {
  return [...new Set([dirname(gitExecutable()), '/usr/bin', '/bin'])].join(':');
}
