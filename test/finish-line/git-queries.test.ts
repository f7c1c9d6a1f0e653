import { mkdir, mkdtemp, readdir, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import t from 'tap';
import { execa } from '#execa';
import {
  changesSince,
  commitExists,
  committedObjectId,
  headCommit,
  isAncestor,
  statusChangedPaths,
  treeOf,
  uncomparedPaths,
  workingTreeScope,
  workingTreeStatus,
} from '../../src/validators/git.js';
import { commitFiles, gitIn } from '../helpers/bridge.js';

/**
 * The finish line's git queries answer "no" (or null: cannot tell) whenever git cannot confirm,
 * never "yes" by default: a missing commit, an object that is not a commit, a name git does not
 * know, or a command that fails.
 */
const repo = await realpath(await mkdtemp(join(tmpdir(), 'harness-git-')));
t.teardown(() => rm(repo, { recursive: true, force: true }));
const git = gitIn(repo);
await git('init', '-q');
await writeFile(join(repo, 'a.txt'), 'one\n');
await git('add', '.');
await git('commit', '-q', '-m', 'one');
const first = await git('rev-parse', 'HEAD');
await writeFile(join(repo, 'a.txt'), 'two\n');
await git('commit', '-q', '-am', 'two');
const second = await git('rev-parse', 'HEAD');
const blob = await git('rev-parse', 'HEAD:a.txt');
const absent = 'e'.repeat(40);

t.test('commitExists: only a commit object that is present', async (t) => {
  t.ok(await commitExists(repo, first));
  t.notOk(await commitExists(repo, blob), 'a blob is not a commit');
  t.notOk(await commitExists(repo, absent), 'an absent commit');
  t.notOk(await commitExists(repo, '--output=x'), 'never an option');
  t.notOk(await commitExists(repo, 'HEAD'), 'a ref names no commit here: only full object names');
  t.notOk(await commitExists(repo, first.slice(0, 12)), 'nor does an abbreviated name');
});

t.test('isAncestor: yes only when git confirms it', async (t) => {
  t.ok(await isAncestor(repo, first, second));
  t.notOk(await isAncestor(repo, second, first));
  t.notOk(await isAncestor(repo, absent, second), 'git fails on an unknown commit: no');
  t.notOk(await isAncestor(join(repo, 'not-a-repo'), first, second), 'git cannot run there: no');
  t.notOk(await isAncestor(repo, 'HEAD~1', second), 'an ancestor git could resolve is still no name');
  t.notOk(await isAncestor(repo, first, 'HEAD'), 'nor is a descendant');
});

t.test('treeOf: only for a full commit name', async (t) => {
  t.equal(await treeOf(repo, second), await git('rev-parse', `${second}^{tree}`));
  t.equal(await treeOf(repo, 'HEAD'), null, 'a ref git could resolve is refused');
});

t.test('committedObjectId: null for nothing committed there, a throw when git cannot answer', async (t) => {
  t.equal(await committedObjectId(repo, 'a.txt'), blob);
  t.equal(await committedObjectId(repo, 'absent.txt'), null, 'nothing committed at that path');
  await t.rejects(committedObjectId(join(repo, 'not-a-repo'), 'a.txt'), 'no repository: no answer');
});

t.test('changesSince: null when git cannot answer, never an empty list', async (t) => {
  t.same(await changesSince(repo, second, null), []);
  await writeFile(join(repo, 'b.txt'), 'new\n');
  t.same(await changesSince(repo, second, null), ['b.txt']);
  t.equal(await changesSince(repo, absent, null), null, 'an unknown commit');
  t.equal(await changesSince(join(repo, 'not-a-repo'), second, null), null, 'no repository');
});

t.test('changesSince: a commit that is not a full name never reaches git as an option', async (t) => {
  const written = join(repo, 'written-by-git');
  t.equal(await changesSince(repo, `--output=${written}`, null), null);
  t.equal(await changesSince(repo, 'HEAD', null), null, 'nor is a ref taken');
  t.notOk((await readdir(repo)).includes('written-by-git'), 'git wrote no file');
});

t.test('a directory in no repository at all: no answer, found by walking up to the root', async (t) => {
  const outside = await realpath(await mkdtemp(join(tmpdir(), 'harness-no-repo-')));
  t.teardown(() => rm(outside, { recursive: true, force: true }));
  const enclosing = await execa('git', ['rev-parse', '--show-toplevel'], { cwd: outside, reject: false });
  if (enclosing.exitCode === 0) {
    t.comment(`not run: the temporary directory is inside the repository ${enclosing.stdout}`);
    return;
  }
  t.equal(await headCommit(outside), null);
  t.equal(await changesSince(outside, second, null), null);
});

t.test('a merge left in conflict is compared, its unmerged path reported as changed', async (t) => {
  const merging = await realpath(await mkdtemp(join(tmpdir(), 'harness-merge-')));
  t.teardown(() => rm(merging, { recursive: true, force: true }));
  const g = gitIn(merging);
  await commitFiles(merging, { 'a.txt': 'one\n', 'b.txt': 'b\n' }, true);
  await g('branch', 'side');
  const ours = await commitFiles(merging, { 'a.txt': 'ours\n' });
  await g('checkout', '-q', 'side');
  await commitFiles(merging, { 'a.txt': 'theirs\n' });
  await g('checkout', '-q', ours);
  const identity = ['-c', 'user.name=t', '-c', 'user.email=t@localhost'];
  const merge = await execa('git', [...identity, 'merge', '-q', 'side'], { cwd: merging, reject: false });
  t.not(merge.exitCode, 0, 'control: the merge stops on a conflict');
  t.same(await changesSince(merging, ours, null), ['a.txt']);
  t.same(statusChangedPaths(await workingTreeStatus(merging, null)), ['a.txt']);
});

t.test('workingTreeScope: only an artifact root inside the repository is left out', async (t) => {
  const scope = (root: string) => workingTreeScope(repo, root);
  t.match(await scope(join(repo, 'artifacts')), {
    top: repo,
    excludeRel: 'artifacts',
    excludeTop: 'artifacts',
  });
  for (const [name, root] of [
    ['the repository itself', repo],
    ['its parent', dirname(repo)],
    ['a sibling', join(dirname(repo), 'beside')],
  ] as const)
    t.match(await scope(root), { top: repo, excludeRel: null, excludeTop: null }, name);
});

t.test('HARNESS_REPO_ROOT reached through a link into the work tree finds the repository', async (t) => {
  const base = await realpath(await mkdtemp(join(tmpdir(), 'harness-linked-')));
  t.teardown(() => rm(base, { recursive: true, force: true }));
  const real = join(base, 'repo');
  await mkdir(real);
  const proven = await commitFiles(real, { 'pkg/lib.js': 'one\n' }, true);
  await symlink(join(real, 'pkg'), join(base, 'link'));
  await writeFile(join(real, 'pkg', 'lib.js'), 'two\n');
  t.same(await changesSince(join(base, 'link'), proven, null), ['pkg/lib.js']);
});

t.test('changesSince: a staged rename names the path it left and the one it took', async (t) => {
  const moving = await realpath(await mkdtemp(join(tmpdir(), 'harness-rename-')));
  t.teardown(() => rm(moving, { recursive: true, force: true }));
  const proven = await commitFiles(moving, { 'app.js': 'export const x = 1;\n' }, true);
  await gitIn(moving)('mv', 'app.js', 'moved.js');
  t.same((await changesSince(moving, proven, null))?.sort(), ['app.js', 'moved.js']);
});

t.test('uncomparedPaths: what only the agent-written index or ignore rules could vouch for', async (t) => {
  const fresh = async () => {
    const dir = await realpath(await mkdtemp(join(tmpdir(), 'harness-uncompared-')));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    return dir;
  };
  const flagged = await fresh();
  await commitFiles(flagged, { 'a.txt': 'a\n', 'b.txt': 'b\n', 'c.txt': 'c\n' }, true);
  await gitIn(flagged)('update-index', '--skip-worktree', 'a.txt');
  await gitIn(flagged)('update-index', '--assume-unchanged', 'b.txt');
  t.same(await uncomparedPaths(flagged, null), ['a.txt', 'b.txt'], 'flagged entries, unchanged bytes or not');

  const selfIgnoring = await fresh();
  await commitFiles(selfIgnoring, { 'a.txt': 'a\n' }, true);
  await writeFile(join(selfIgnoring, '.gitignore'), '.gitignore\nbackdoor.js\n');
  await writeFile(join(selfIgnoring, 'backdoor.js'), 'x\n');
  t.same(await uncomparedPaths(selfIgnoring, null), ['.gitignore'], 'a top-level .gitignore hiding itself');

  const ignoredDir = await fresh();
  await commitFiles(ignoredDir, { '.gitignore': 'build/\n' }, true);
  await mkdir(join(ignoredDir, 'build'));
  await writeFile(join(ignoredDir, 'build', '.gitignore'), '*\n');
  await writeFile(join(ignoredDir, 'build', 'out.js'), 'x\n');
  t.same(
    await uncomparedPaths(ignoredDir, null),
    [],
    'a .gitignore inside a committed-ignored directory hides nothing more',
  );
});

t.test('HARNESS_REPO_ROOT in a subdirectory: index entries named from the top level', async (t) => {
  const top = await realpath(await mkdtemp(join(tmpdir(), 'harness-subdir-')));
  t.teardown(() => rm(top, { recursive: true, force: true }));
  const inner = await realpath(await mkdtemp(join(tmpdir(), 'harness-inner-')));
  t.teardown(() => rm(inner, { recursive: true, force: true }));
  await commitFiles(inner, { 'lib.js': 'one\n' }, true);
  await commitFiles(top, { 'pkg/x.txt': 'x\n' }, true);
  await gitIn(top)('update-index', '--skip-worktree', 'pkg/x.txt');
  const pkg = join(top, 'pkg');
  t.same(await uncomparedPaths(pkg, null), ['pkg/x.txt'], 'a flagged entry under it');
  // A submodule checked out under the subdirectory: what changes inside it cannot be seen.
  await gitIn(top)('clone', '-q', inner, 'pkg/sm');
  await gitIn(top)('add', 'pkg/sm');
  await gitIn(top)('commit', '-q', '-m', 'submodule');
  const head = await gitIn(top)('rev-parse', 'HEAD');
  await writeFile(join(pkg, 'sm', 'lib.js'), 'changed inside the submodule\n');
  t.equal(await changesSince(pkg, head, null), null, 'a checked-out submodule below it: no answer');
});

t.test('workingTreeStatus: only untracked files under the artifact root itself are left out', async (t) => {
  const dir = await realpath(await mkdtemp(join(tmpdir(), 'harness-status-')));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await commitFiles(dir, { 'a.txt': 'a\n' }, true);
  for (const path of ['artifacts/run.json', 'artifacts-2/x.js', 'artifactsx.js']) {
    await mkdir(join(dir, dirname(path)), { recursive: true });
    await writeFile(join(dir, path), 'x\n');
  }
  t.same(statusChangedPaths(await workingTreeStatus(dir, 'artifacts')).sort(), [
    'artifacts-2/x.js',
    'artifactsx.js',
  ]);
});

t.test('a tracked link to another checkout is a file, not a checked-out submodule', async (t) => {
  const dir = await realpath(await mkdtemp(join(tmpdir(), 'harness-link-')));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await symlink(repo, join(dir, 'other'));
  const proven = await commitFiles(dir, { 'a.txt': 'a\n' }, true);
  t.same(await changesSince(dir, proven, null), [], 'compared, and unchanged');
});
