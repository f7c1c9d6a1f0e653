import { mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { changesSince, commitExists, isAncestor } from '../../src/validators/git.js';
import { gitIn } from '../helpers/bridge.js';

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
});

t.test('changesSince: null when git cannot answer, never an empty list', async (t) => {
  t.same(await changesSince(repo, second, null), []);
  await writeFile(join(repo, 'b.txt'), 'new\n');
  t.same(await changesSince(repo, second, null), ['b.txt']);
  t.equal(await changesSince(repo, absent, null), null, 'an unknown commit');
  t.equal(await changesSince(join(repo, 'not-a-repo'), second, null), null, 'no repository');
});
