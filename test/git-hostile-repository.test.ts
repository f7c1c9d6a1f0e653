import { mkdir, mkdtemp, readdir, realpath, rm, unlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { checkTrustPin, trustStoreDigest } from '../src/server/trust-pin.js';
import { StartupError } from '../src/storage/lease.js';
import {
  changesSince,
  commitExists,
  committedObjectId,
  headCommit,
  isAncestor,
  showCommitted,
  statusChangedPaths,
  treeOf,
  uncomparedPaths,
  workingTreeStatus,
} from '../src/validators/git.js';
import { commitFiles, gitIn } from './helpers/bridge.js';

/**
 * The agent writes to the operator's repository: `.git/config`, `.git/info/*`, attributes, the
 * index, submodules. Git run by the bridge or its validators must run none of the commands those
 * name, since they would run as the bridge's user. Each repository here names commands that create
 * a marker file; every git query of src/validators/git.ts (and the startup trust-pin check) runs
 * against it, no marker may appear, and the answers are those of the raw bytes.
 */
const ABSENT = 'e'.repeat(40);
const TRUST_PATH = '.harness-pack/controls/review-trust.v1.json';

export interface Hostile {
  repo: string;
  markers: string;
  /** A shell command creating marker `name`. */
  touch: (name: string) => string;
  first: string;
  head: string;
  /** The pin of the trust store `head` commits. */
  pin: string;
  git: (...args: string[]) => Promise<string>;
}

/** A repository with a.txt `one\n` (commit `first`) and a trust store (`head`), nothing hostile yet. */
async function repository(t: Test, dir?: string): Promise<Hostile> {
  const base = await realpath(await mkdtemp(join(tmpdir(), 'harness-hostile-')));
  t.teardown(() => rm(base, { recursive: true, force: true }));
  const markers = join(base, 'markers');
  await mkdir(markers);
  const repo = join(base, dir ?? 'repo');
  await mkdir(repo);
  const first = await commitFiles(repo, { 'a.txt': 'one\n' }, true);
  const store = '{"schema":"harness.review-trust.v1","keys":[]}\n';
  const head = await commitFiles(repo, { [TRUST_PATH]: store });
  const pin = trustStoreDigest(store);
  const git = gitIn(repo);
  return { repo, markers, first, head, pin, git, touch: (name) => `touch '${join(markers, name)}'` };
}

/** Same size, another mtime: git must hash the file (so run its clean filter) to compare it. */
async function modify(path: string) {
  await writeFile(path, 'two\n');
  const later = new Date(Date.now() + 10_000);
  await utimes(path, later, later);
}

/** Every git.ts query and the trust-pin check, with their right answers; then no marker. */
async function driveAll(t: Test, h: Hostile, changed: string[] | null, trustStore = true) {
  t.same(await readdir(h.markers), [], 'setting the repository up ran nothing');
  t.equal(await headCommit(h.repo), h.head, 'headCommit');
  t.ok(await commitExists(h.repo, h.first), 'commitExists: present');
  t.notOk(await commitExists(h.repo, ABSENT), 'commitExists: absent');
  t.ok(await isAncestor(h.repo, h.first, h.head), 'isAncestor');
  t.notOk(await isAncestor(h.repo, ABSENT, h.head), 'isAncestor of an absent commit');
  t.equal(await treeOf(h.repo, h.head), await h.git('rev-parse', `${h.head}^{tree}`), 'treeOf');
  t.same(await changesSince(h.repo, h.head, null), changed, 'changesSince compares raw bytes');
  if (changed === null) {
    await t.rejects(workingTreeStatus(h.repo, null), 'workingTreeStatus cannot tell');
    t.equal(await uncomparedPaths(h.repo, null), null, 'uncomparedPaths cannot tell');
  } else t.same(statusChangedPaths(await workingTreeStatus(h.repo, null)), changed, 'workingTreeStatus');
  t.same(await showCommitted(h.repo, 'a.txt'), Buffer.from('one\n'), 'showCommitted');
  t.equal(await committedObjectId(h.repo, 'a.txt'), await h.git('rev-parse', 'HEAD:a.txt'));
  if (trustStore) t.equal(await checkTrustPin(h.repo, h.pin), TRUST_PATH, 'the trust pin holds');
  else await t.rejects(checkTrustPin(h.repo, h.pin), StartupError, 'no committed trust store: startup stops');
  t.same(await readdir(h.markers), [], 'no command of the repository ran');
}

/**
 * One repository per vector: attributes in `.git/info/attributes` and config naming commands, and
 * a.txt modified (same size, another mtime), so git must read it to compare it.
 */
const vectors: { name: string; attributes: string; config: (touch: Hostile['touch']) => string[][] }[] = [
  {
    name: 'an fsmonitor hook does not run',
    attributes: '',
    config: (touch) => [['core.fsmonitor', `${touch('fsmonitor')}; false`]],
  },
  {
    name: 'textconv and external diff drivers do not run',
    attributes: '*.txt diff=tc',
    config: (touch) => [
      ['diff.tc.textconv', `${touch('textconv')}; cat`],
      ['diff.tc.command', `${touch('diff-command')}; true`],
      ['diff.external', `${touch('diff-external')}; true`],
    ],
  },
];

for (const vector of vectors) {
  t.test(vector.name, async (t) => {
    const h = await repository(t);
    await writeFile(join(h.repo, '.git/info/attributes'), `${vector.attributes}\n`);
    for (const [key, value] of vector.config(h.touch)) await h.git('config', key!, value!);
    await modify(join(h.repo, 'a.txt'));
    await driveAll(t, h, ['a.txt']);
  });
}

/**
 * The trust store's tree entry at HEAD is a gitlink naming a commit the repository holds: `git
 * show` would show that commit with its diff (textconv); `cat-file blob` refuses it.
 */
t.test('a committed trust store that is a commit is not shown with its diff', async (t) => {
  const h = await repository(t);
  await h.git('rm', '-q', '--cached', TRUST_PATH);
  await h.git('update-index', '--add', '--cacheinfo', `160000,${h.first},${TRUST_PATH}`);
  await h.git('commit', '-q', '-m', 'the trust store is a commit');
  await writeFile(join(h.repo, '.git/info/attributes'), '* diff=tc\n');
  await h.git('config', 'diff.tc.textconv', `${h.touch('textconv')}; cat`);

  t.equal(await showCommitted(h.repo, TRUST_PATH), null, 'no blob is committed there');
  t.equal(await committedObjectId(h.repo, TRUST_PATH), h.first, 'the key binds the entry it names');
  await t.rejects(checkTrustPin(h.repo, h.pin), StartupError, 'startup stops');
  t.same(await readdir(h.markers), [], 'no command of the repository ran');
});

/**
 * A partial clone fetches a missing object from its promisor remote, whose URL may be a command
 * (`ext::`) the repository allows itself. A query for an absent commit, or a committed blob removed
 * from the object store, would start that fetch.
 */
t.test('a promisor remote is never fetched from', async (t) => {
  const h = await repository(t);
  const blob = await h.git('rev-parse', `HEAD:${TRUST_PATH}`);
  await unlink(join(h.repo, '.git/objects', blob.slice(0, 2), blob.slice(2)));
  await h.git('config', 'core.repositoryformatversion', '1');
  await h.git('config', 'extensions.partialClone', 'evil');
  await h.git('config', 'remote.evil.url', `ext::sh -c ${h.touch('fetch').replaceAll(' ', '% ')}`);
  await h.git('config', 'remote.evil.promisor', 'true');
  await h.git('config', 'protocol.ext.allow', 'always');

  await driveAll(t, h, [], false);
  t.equal(await showCommitted(h.repo, TRUST_PATH), null, 'a missing blob is not fetched');
  t.equal(await committedObjectId(h.repo, TRUST_PATH), blob, 'its name is in the tree');
  t.same(await readdir(h.markers), [], 'no fetch ran');
});

/**
 * Submodules: `git status`/`git diff` with `--ignore-submodules=none` start `git status` in every
 * checked-out submodule, which reads that submodule's own config. Git is never started there: a
 * working tree with a checked-out submodule cannot be compared (whatever its layout), and neither
 * its filter nor its fsmonitor runs.
 */
type Layout = 'absorbed' | 'git directory' | 'git file pointing outside';

async function withSubmodule(t: Test, layout: Layout): Promise<Hostile & { gitDir: string }> {
  const h = await repository(t, 'super');
  const sub = await repository(t, 'sub');
  if (layout === 'absorbed')
    await h.git('-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', sub.repo, 'sm');
  else if (layout === 'git directory') await h.git('clone', '-q', sub.repo, 'sm');
  else
    await h.git('clone', '-q', `--separate-git-dir=${join(sub.repo, '..', 'elsewhere.git')}`, sub.repo, 'sm');
  await h.git('add', '.');
  await h.git('commit', '-q', '-m', 'submodule');
  const sm = gitIn(join(h.repo, 'sm'));
  const gitDir = await sm('rev-parse', '--absolute-git-dir');
  const head = await h.git('rev-parse', 'HEAD');
  await mkdir(join(gitDir, 'info'), { recursive: true });
  await writeFile(join(gitDir, 'info', 'attributes'), '*.txt filter=sub\n');
  await sm('config', 'filter.sub.clean', `${h.touch('submodule-clean')}; cat >/dev/null; printf 'one\\n'`);
  await sm('config', 'core.fsmonitor', `${h.touch('submodule-fsmonitor')}; false`);
  await modify(join(h.repo, 'sm', 'a.txt'));
  return { ...h, head, gitDir };
}

for (const layout of ['absorbed', 'git directory', 'git file pointing outside'] as const) {
  t.test(`a checked-out submodule is not descended into (${layout})`, async (t) => {
    const h = await withSubmodule(t, layout);
    const where = {
      absorbed: h.gitDir === join(h.repo, '.git', 'modules', 'sm'),
      'git directory': h.gitDir === join(h.repo, 'sm', '.git'),
      'git file pointing outside': !h.gitDir.startsWith(h.repo),
    };
    t.ok(where[layout], `the layout under test: ${h.gitDir}`);
    await driveAll(t, h, null);
  });
}

t.test('a submodule outside the compared part of the tree does not stop the comparison', async (t) => {
  const h = await withSubmodule(t, 'git directory');
  t.same(await changesSince(h.repo, h.head, 'sm'), [], 'sm is the artifact root, left out');
  t.same(statusChangedPaths(await workingTreeStatus(h.repo, 'sm')), []);
  t.same(await readdir(h.markers), [], 'no command of the repository ran');
});

/**
 * A gitlink that is not checked out is compared by the commit it names, whatever the repository
 * says about ignoring submodules (`diff.ignoreSubmodules=all` hid it from `git diff`).
 */
t.test('a gitlink whose commit changed shows as changed', async (t) => {
  const h = await repository(t);
  await h.git('update-index', '--add', '--cacheinfo', `160000,${'a'.repeat(40)},sm`);
  await h.git('commit', '-q', '-m', 'gitlink');
  const head = await h.git('rev-parse', 'HEAD');
  await h.git('update-index', '--cacheinfo', `160000,${'b'.repeat(40)},sm`);
  await h.git('config', 'diff.ignoreSubmodules', 'all');
  await h.git('config', 'submodule.sm.ignore', 'all');
  t.same(await changesSince(h.repo, head, null), ['sm']);
  const status = (await workingTreeStatus(h.repo, null)).toString('utf8');
  t.match(status, /\x001 M. S\.\.\. 160000 160000 \d+ a{40} b{40} sm\0/, 'the index entry changed');
});
