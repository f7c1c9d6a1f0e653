import { execa } from 'execa';

/**
 * Git queries for the finish line. Commit names come from agent-written artifacts: they are
 * checked against a full-object-name pattern before reaching git (so a value like `--output=x`
 * can never become an option), and git runs without a shell, in the repository root only.
 */
const COMMIT = /^([0-9a-f]{40}|[0-9a-f]{64})$/;
const GIT_TIMEOUT_MS = 15_000;

export function isCommitName(value: string): boolean {
  return COMMIT.test(value);
}

async function git(repoRoot: string, args: string[]) {
  // A hostile repository config could name an fsmonitor hook; git must run no repository code.
  const hardened = [
    '-c',
    'core.fsmonitor=false',
    '-c',
    'core.untrackedCache=false',
    '-c',
    'core.hooksPath=/dev/null',
  ];
  return execa('git', [...hardened, ...args], {
    cwd: repoRoot,
    reject: false,
    timeout: GIT_TIMEOUT_MS,
    stdin: 'ignore',
    encoding: 'buffer',
    maxBuffer: 16 * 1024 * 1024,
    // Never prompt and never read the user's pager/editor from a hostile config.
    env: { GIT_TERMINAL_PROMPT: '0', GIT_PAGER: 'cat', GIT_OPTIONAL_LOCKS: '0' },
  });
}

/** True only when `sha` is a full object name of a commit present in the repository. */
export async function commitExists(repoRoot: string, sha: string): Promise<boolean> {
  if (!isCommitName(sha)) return false;
  const r = await git(repoRoot, ['cat-file', '-e', `${sha}^{commit}`]);
  return r.exitCode === 0;
}

/** True when `ancestor` is an ancestor of (or equal to) `descendant`. Both must be full names. */
export async function isAncestor(repoRoot: string, ancestor: string, descendant: string): Promise<boolean> {
  if (!isCommitName(ancestor) || !isCommitName(descendant)) return false;
  const r = await git(repoRoot, ['merge-base', '--is-ancestor', ancestor, descendant]);
  return r.exitCode === 0;
}

/** The bytes of `path` in the committed tree at HEAD, or null when it is not committed there. */
export async function showCommitted(repoRoot: string, path: string): Promise<Buffer | null> {
  const r = await git(repoRoot, ['show', `HEAD:${path}`]);
  return r.exitCode === 0 ? Buffer.from(r.stdout) : null;
}

/** HEAD's full commit name, or null outside a repository. */
export async function headCommit(repoRoot: string): Promise<string | null> {
  const r = await git(repoRoot, ['rev-parse', '--verify', 'HEAD^{commit}']);
  const out = Buffer.from(r.stdout).toString('utf8').trim();
  return r.exitCode === 0 && isCommitName(out) ? out : null;
}

/**
 * Working-tree changes relative to `commit`: tracked files that differ and untracked files that are
 * not ignored, excluding `excludeRel` (the artifact root when it sits inside the repository).
 * Returns null when git cannot answer (which callers treat as a problem, never a pass).
 */
export async function changesSince(
  repoRoot: string,
  commit: string,
  excludeRel: string | null,
): Promise<string[] | null> {
  if (!isCommitName(commit)) return null;
  const spec = excludeRel ? ['--', '.', `:(exclude)${excludeRel}`] : ['--', '.'];
  const diff = await git(repoRoot, ['diff', '--name-only', '-z', '--no-renames', commit, ...spec]);
  const untracked = await git(repoRoot, ['ls-files', '--others', '--exclude-standard', '-z', ...spec]);
  if (diff.exitCode !== 0 || untracked.exitCode !== 0) return null;
  const names = (b: Uint8Array) => Buffer.from(b).toString('utf8').split('\0').filter(Boolean);
  return [...names(diff.stdout), ...names(untracked.stdout)];
}
