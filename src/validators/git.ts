import { lstat, realpath } from 'node:fs/promises';
import { isAbsolute, join, relative, sep } from 'node:path';
import { execa } from '#execa';
import { childEnvironment } from './child-environment.js';
import { isCommitName } from './commit-name.js';
import { gitExecutable } from './git-executable.js';
import { GIT_ISOLATION_ENV, pinnedRepository } from './git-isolation.js';
import { shadowRepository } from './git-shadow.js';

/**
 * Git queries for the finish line, and for the repository state the completed-run verdict cache
 * binds (src/server/verdict-inputs.ts), which the bridge process takes itself. Commit names come
 * from agent-written artifacts: they are checked against a full-object-name pattern before
 * reaching git (so a value like `--output=x` can never become an option), and git runs without a
 * shell, by the absolute path git-executable.ts resolved, in the repository root only, with the
 * validator children's scrubbed environment (never a bridge credential, in whichever process it
 * runs).
 */
const GIT_TIMEOUT_MS = 15_000;

interface GitResult {
  exitCode: number;
  stdout: Uint8Array;
}

/** What a query answers when there is no repository to ask: git is not started. */
const NO_REPOSITORY: GitResult = { exitCode: 128, stdout: new Uint8Array() };

interface RunOptions {
  /** GIT_INDEX_FILE instead of the agent's index. */
  index?: string;
  /** Bytes for git's standard input (none otherwise). */
  input?: Uint8Array;
}

type Run = (args: string[], options?: RunOptions) => Promise<GitResult>;

/**
 * Runs `use` with git bound to the repository read through a shadow git directory
 * (git-shadow.ts): git never reads the agent-written `.git/config` or `.git/info/*`, so no filter,
 * textconv, fsmonitor or transport the repository defines exists for it. The `-c` options say the
 * same again, should a config ever be read. The work tree is HARNESS_REPO_ROOT's own
 * (git-isolation.ts). `scratch` is the shadow directory, removed once `use` settles.
 */
async function inShadow(
  repoRoot: string,
  use: (run: Run, scratch: string) => Promise<GitResult>,
): Promise<GitResult> {
  const hardened = [
    '-c',
    'core.fsmonitor=false',
    '-c',
    'core.untrackedCache=false',
    '-c',
    'core.hooksPath=/dev/null',
  ];
  const env = childEnvironment({
    // Never prompt and never page.
    GIT_TERMINAL_PROMPT: '0',
    GIT_PAGER: 'cat',
    GIT_OPTIONAL_LOCKS: '0',
    ...GIT_ISOLATION_ENV,
  });
  const top = await pinnedRepository(repoRoot);
  if (top === null) return NO_REPOSITORY;
  const shadow = await shadowRepository(top, env);
  if (shadow === null) return NO_REPOSITORY;
  const run: Run = async (args, { index, input } = {}) => {
    const r = await execa(
      gitExecutable(),
      [...hardened, `--git-dir=${shadow.dir}`, `--work-tree=${top}`, ...args],
      {
        cwd: repoRoot,
        reject: false,
        timeout: GIT_TIMEOUT_MS,
        ...(input === undefined ? { stdin: 'ignore' as const } : { input }),
        encoding: 'buffer',
        // Byte for byte: showCommitted's blob keeps its final newline.
        stripFinalNewline: false,
        maxBuffer: 16 * 1024 * 1024,
        extendEnv: false,
        env: { ...env, ...shadow.env, ...(index === undefined ? {} : { GIT_INDEX_FILE: index }) },
      },
    );
    // Past maxBuffer execa truncates stdout yet keeps git's exit code (0 once git had written
    // everything): a cut listing is no answer, never a shorter one.
    return { exitCode: r.isMaxBuffer ? -1 : (r.exitCode ?? -1), stdout: r.stdout };
  };
  try {
    return await use(run, shadow.dir);
  } finally {
    await shadow.dispose();
  }
}

/** One git command in the shadow git directory, with the agent's index (read as data). */
function git(repoRoot: string, args: string[]): Promise<GitResult> {
  return inShadow(repoRoot, (run) => run(args));
}

/**
 * One git command that compares the work tree with the index, run with a bridge-private index
 * instead of the agent's: the agent's entries (path, mode, object name, stage) copied by
 * `update-index --index-info` into a new file in the shadow directory, with no stat data, then
 * refreshed by git (`update-index --refresh`), which hashes every file to record its stat data.
 *
 * The agent writes `.git/index`, stat data included, and git takes an entry whose stat data match
 * the file as proof that the file holds the entry's object: an entry pairing the proven object
 * name with an edited file's size, times and inode hides that edit from `diff` and `status`
 * without any flag. A copied entry's stat data are zero and match no file, so the only stat data
 * git trusts here are those it recorded after hashing the file itself, in this call. The refresh
 * compares a file's hash with the entry's object name, never reading the object (a blob missing
 * from a partial clone is not needed), and does not look into submodules. Flags are not copied:
 * a skip-worktree or assume-unchanged file is compared by its bytes too (uncomparedPaths still
 * reports it).
 */
function gitHashingWorkTree(repoRoot: string, args: string[]): Promise<GitResult> {
  return inShadow(repoRoot, async (run, scratch) => {
    // Every entry, from the top level: `--index-info` takes paths from there.
    const entries = await run(['ls-files', '--stage', '-z', '--full-name', '--', ':/']);
    if (entries.exitCode !== 0) return entries;
    const index = join(scratch, 'index');
    const copied = await run(['update-index', '-z', '--index-info'], { index, input: entries.stdout });
    if (copied.exitCode !== 0) return copied;
    const refresh = ['update-index', '-q', '--unmerged', '--ignore-submodules', '--refresh'];
    const hashed = await run(refresh, { index });
    return hashed.exitCode === 0 ? run(args, { index }) : hashed;
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

/**
 * The object name of the tree `commit` records, or null when git cannot name it. With replace
 * objects off a commit's tree is fixed by the commit's name.
 */
export async function treeOf(repoRoot: string, commit: string): Promise<string | null> {
  if (!isCommitName(commit)) return null;
  const r = await git(repoRoot, ['rev-parse', '--verify', '--quiet', `${commit}^{tree}`]);
  const out = Buffer.from(r.stdout).toString('utf8').trim();
  return r.exitCode === 0 && isCommitName(out) ? out : null;
}

/**
 * The bytes of the blob at `path` in the tree of `commit` (HEAD's when omitted; otherwise a full
 * object name), or null when no blob is committed there. `cat-file blob` refuses any other object:
 * `git show` of a gitlink naming a commit the repository holds printed that commit's diff, through
 * the repository's textconv driver.
 */
export async function showCommitted(repoRoot: string, path: string, commit = 'HEAD'): Promise<Buffer | null> {
  if (commit !== 'HEAD' && !isCommitName(commit)) return null;
  const r = await git(repoRoot, ['cat-file', 'blob', `${commit}:${path}`]);
  return r.exitCode === 0 ? Buffer.from(r.stdout) : null;
}

/**
 * The mode and object type of the entry at `path` (from the top level) in the tree of `commit` (a
 * full object name), or null when the tree has none. Throws when git cannot answer.
 */
export async function committedEntry(
  repoRoot: string,
  commit: string,
  path: string,
): Promise<{ mode: string; type: string } | null> {
  if (!isCommitName(commit)) throw new Error(`${commit} is not a full commit name`);
  const r = await git(repoRoot, ['ls-tree', '-z', '--full-tree', commit, '--', path]);
  if (r.exitCode !== 0) throw new Error(`git cannot list ${path} at ${commit}`);
  for (const line of Buffer.from(r.stdout).toString('utf8').split('\0')) {
    const m = /^(\d{6}) (\w+) [0-9a-f]+\t(.*)$/s.exec(line);
    if (m && m[3] === path) return { mode: m[1] as string, type: m[2] as string };
  }
  return null;
}

/** HEAD's full commit name, or null outside a repository. */
export async function headCommit(repoRoot: string): Promise<string | null> {
  const r = await git(repoRoot, ['rev-parse', '--verify', 'HEAD^{commit}']);
  const out = Buffer.from(r.stdout).toString('utf8').trim();
  return r.exitCode === 0 && isCommitName(out) ? out : null;
}

/**
 * The repository's real path, the top level of its work tree (`repo` itself, or an ancestor when
 * HARNESS_REPO_ROOT is a subdirectory; null outside a repository), and the artifact root relative
 * to `repo` (`excludeRel`) and to `top` (`excludeTop`) when the root sits inside it. Only untracked
 * paths under the root are left out of the post-proof comparison: a tracked file there is compared
 * like any other, so the agent's choice of root cannot take application code out of the check.
 * Pathspecs are relative to `repo`; the paths git reports are relative to `top`.
 */
export interface WorkingTreeScope {
  repo: string;
  top: string | null;
  excludeRel: string | null;
  excludeTop: string | null;
}

export async function workingTreeScope(repoRoot: string, realRoot: string): Promise<WorkingTreeScope> {
  const repo = await realpath(repoRoot).catch(() => repoRoot);
  const rel = relative(repo, realRoot);
  const inside = rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel);
  const top = await pinnedRepository(repo);
  const posix = (p: string) => p.split(sep).join('/');
  return {
    repo,
    top,
    excludeRel: inside ? posix(rel) : null,
    excludeTop: inside && top !== null ? posix(relative(top, realRoot)) : null,
  };
}

const scopeSpec = (excludeRel: string | null) =>
  excludeRel ? ['--', '.', `:(exclude)${excludeRel}`] : ['--', '.'];

/**
 * No external diff or textconv (`--name-only` reaches neither: defence in depth), and never into a
 * submodule: with `none` (git diff's default) git starts `git status` in every checked-out
 * submodule, which reads that submodule's own config, fsmonitor and filters included; with `dirty`
 * a gitlink is compared by the commit it names and no child starts. Explicit, so the repository's
 * `diff.ignoreSubmodules` or `submodule.<name>.ignore=all` cannot hide a gitlink's changed commit.
 */
const DIFF_OPTIONS = ['--no-ext-diff', '--no-textconv', '--ignore-submodules=dirty'];

const names = (b: Uint8Array) => Buffer.from(b).toString('utf8').split('\0').filter(Boolean);

/**
 * Working-tree changes relative to `commit`: tracked files whose bytes differ (each file hashed,
 * never taken as unchanged on the index's stat data: gitHashingWorkTree), under the artifact root
 * too, and every path uncomparedPaths reports (untracked ones outside `excludeRel`, the artifact
 * root when it sits inside the repository). Returns null when git cannot answer (which callers
 * treat as a problem, never a pass).
 */
export async function changesSince(
  repoRoot: string,
  commit: string,
  excludeRel: string | null,
): Promise<string[] | null> {
  if (!isCommitName(commit)) return null;
  const [diff, uncompared] = await Promise.all([
    gitHashingWorkTree(repoRoot, [
      'diff',
      ...DIFF_OPTIONS,
      '--name-only',
      '-z',
      '--no-renames',
      commit,
      ...scopeSpec(null),
    ]),
    uncomparedPaths(repoRoot, excludeRel),
  ]);
  if (diff.exitCode !== 0 || uncompared === null) return null;
  return [...new Set([...names(diff.stdout), ...uncompared])];
}

/**
 * What a diff against a commit cannot show, or shows only on the agent's say-so (the index and
 * `.git/info` are agent-written), named from the top level:
 * - untracked files outside `excludeRel` that the `.gitignore` files in the work tree do not
 *   ignore: never `.git/info/exclude` nor `core.excludesFile`, which hide files without any commit;
 * - untracked `.gitignore` files outside `excludeRel` that are ignored (one can ignore itself and
 *   what it hides);
 * - index entries flagged skip-worktree (tag `S`; every path outside a sparse checkout has it) or
 *   assume-unchanged (a lower-case tag), under the artifact root too: git neither reads nor
 *   compares their files, so each is reported whatever its bytes. A repository using sparse
 *   checkout cannot pass.
 * Null when git cannot answer, and when a submodule is checked out (checkedOutSubmodule).
 */
export function uncomparedPaths(repoRoot: string, excludeRel: string | null): Promise<string[] | null> {
  return uncomparedWith(repoRoot, excludeRel, indexEntries(repoRoot));
}

async function uncomparedWith(
  repoRoot: string,
  excludeRel: string | null,
  indexed: Promise<IndexEntry[] | null>,
): Promise<string[] | null> {
  const spec = scopeSpec(excludeRel);
  const committedRules = ['--exclude-per-directory=.gitignore', '--full-name', '-z'];
  const [untracked, ignored, entries] = await Promise.all([
    git(repoRoot, ['ls-files', '--others', ...committedRules, ...spec]),
    git(repoRoot, ['ls-files', '--others', '--ignored', '--directory', ...committedRules, ...spec]),
    indexed,
  ]);
  if (untracked.exitCode !== 0 || ignored.exitCode !== 0 || entries === null) return null;
  if (await checkedOutSubmodule(repoRoot, entries)) return null;
  const paths = names(untracked.stdout);
  for (const p of names(ignored.stdout)) if (p === '.gitignore' || p.endsWith('/.gitignore')) paths.push(p);
  for (const { tag, path } of entries) if (tag === 'S' || tag !== tag.toUpperCase()) paths.push(path);
  return paths;
}

/**
 * Every file outside `excludeRel` the work tree's `.gitignore` files ignore, ignored directories
 * entered, from the top level (ignored-files.ts); null when git cannot answer or past its ceiling.
 */
export async function ignoredPaths(repoRoot: string, excludeRel: string | null): Promise<string[] | null> {
  const args = [
    'ls-files',
    '--others',
    '--ignored',
    '--exclude-per-directory=.gitignore',
    '--full-name',
    '-z',
  ];
  const r = await git(repoRoot, [...args, ...scopeSpec(excludeRel)]);
  return r.exitCode === 0 ? names(r.stdout) : null;
}

interface IndexEntry {
  /** `git ls-files -v`'s tag: `S` skip-worktree, lower case assume-unchanged. */
  tag: string;
  mode: string;
  /** From the top level. */
  path: string;
}

/** Every index entry under `repoRoot` (tracked paths are never left out: the artifact root's neither). */
async function indexEntries(repoRoot: string): Promise<IndexEntry[] | null> {
  const r = await git(repoRoot, ['ls-files', '-v', '-s', '--full-name', '-z', ...scopeSpec(null)]);
  if (r.exitCode !== 0) return null;
  // `<tag> <mode> <object> <stage>\t<path>`
  return names(r.stdout).map((entry) => {
    const tab = entry.indexOf('\t');
    return { tag: entry.slice(0, 1), mode: entry.slice(2, 8), path: entry.slice(tab + 1) };
  });
}

/**
 * True when a gitlink of the index has its submodule checked out (`<top>/<path>/.git` exists,
 * whatever its layout). Git compares a gitlink by the commit it names and never enters the
 * submodule (DIFF_OPTIONS): what changed inside one cannot be seen, so such a working tree is not
 * compared at all. The agent can check one out at any moment; this is read for every query.
 */
async function checkedOutSubmodule(repoRoot: string, entries: IndexEntry[]): Promise<boolean> {
  const top = await pinnedRepository(repoRoot);
  if (top === null) return true;
  for (const { mode, path } of entries) {
    if (mode !== '160000') continue;
    if ((await lstat(join(top, path, '.git')).catch(() => null)) !== null) return true;
  }
  return false;
}

/**
 * The object name of `path` in HEAD's tree (what showCommitted prints the bytes of), or null when
 * nothing is committed there. Throws when git cannot answer (not a repository, a timeout).
 */
export async function committedObjectId(repoRoot: string, path: string): Promise<string | null> {
  const r = await git(repoRoot, ['rev-parse', '--verify', '--quiet', `HEAD:${path}`]);
  const out = Buffer.from(r.stdout).toString('utf8').trim();
  if (r.exitCode === 0 && isCommitName(out)) return out;
  if (r.exitCode === 1) return null;
  throw new Error(`git cannot name HEAD:${path}`);
}

/**
 * `git status --porcelain=v2 --branch` of the working tree that changesSince compares: HEAD's
 * commit, every index and working-tree change against it (each file hashed, gitHashingWorkTree),
 * and every untracked file that is not ignored (one entry each) except those under `excludeTop`
 * (the artifact root, relative to the top level, as status names paths). Throws when git cannot
 * answer, and when a submodule is checked out (checkedOutSubmodule).
 */
export function workingTreeStatus(repoRoot: string, excludeTop: string | null): Promise<Buffer> {
  return statusWith(repoRoot, excludeTop, indexEntries(repoRoot));
}

async function statusWith(
  repoRoot: string,
  excludeTop: string | null,
  indexed: Promise<IndexEntry[] | null>,
): Promise<Buffer> {
  const [r, entries] = await Promise.all([
    gitHashingWorkTree(repoRoot, [
      ...['status', '--porcelain=v2', '-z', '--branch', '--untracked-files=all', '--no-renames'],
      ...['--ignore-submodules=dirty', ...scopeSpec(null)],
    ]),
    indexed,
  ]);
  if (r.exitCode !== 0 || entries === null) throw new Error('git cannot report the working tree status');
  if (await checkedOutSubmodule(repoRoot, entries)) throw new Error('a submodule is checked out');
  const status = Buffer.from(r.stdout);
  if (excludeTop === null) return status;
  // A pathspec would leave out the root's tracked files too; only its untracked ones go.
  const under = (path: string) => path === excludeTop || path.startsWith(`${excludeTop}/`);
  const kept = status
    .toString('utf8')
    .split('\0')
    .filter((entry) => !(entry.startsWith('? ') && under(entry.slice(2))));
  return Buffer.from(kept.join('\0'), 'utf8');
}

/**
 * workingTreeStatus and uncomparedPaths together, as the verdict cache key binds them, from one
 * listing of the index entries. Throws when git cannot answer either.
 */
export async function workingTreeListing(
  repoRoot: string,
  scope: Pick<WorkingTreeScope, 'excludeRel' | 'excludeTop'>,
): Promise<{ status: Buffer; uncompared: string[] }> {
  const indexed = indexEntries(repoRoot);
  const [status, uncompared] = await Promise.all([
    statusWith(repoRoot, scope.excludeTop, indexed),
    uncomparedWith(repoRoot, scope.excludeRel, indexed),
  ]);
  if (uncompared === null) throw new Error('git cannot list the working tree');
  return { status, uncompared };
}

/** The paths of a porcelain v2 `-z` status whose working-tree bytes may differ from the index. */
export function statusChangedPaths(status: Buffer): string[] {
  const paths: string[] = [];
  for (const entry of status.toString('utf8').split('\0')) {
    if (entry.startsWith('? ')) paths.push(entry.slice(2));
    // `1 XY sub mH mI mW hH hI path`, `u XY sub m1 m2 m3 mW h1 h2 h3 path`: Y is the working tree.
    else if (entry.startsWith('1 ') || entry.startsWith('u ')) {
      const fields = entry.split(' ');
      const path = fields.slice(entry.startsWith('1 ') ? 8 : 10).join(' ');
      if (entry.startsWith('u ') || fields[1]?.[1] !== '.') paths.push(path);
    }
  }
  return paths;
}
