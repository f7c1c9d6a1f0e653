import {
  chmod,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  realpath,
  rm,
  symlink,
  unlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { execa } from '#execa';
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
import { forgeIndexEntry } from './helpers/forged-index.js';
import { copyOfRepository } from './helpers/repository-template.js';

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
  const store = '{"schema":"harness.review-trust.v1","keys":[]}\n';
  // Made once and copied (helpers/repository-template.ts); each test makes its copy hostile.
  const { first, head } = await copyOfRepository(
    'hostile base',
    async (r) => {
      await mkdir(r);
      return {
        first: await commitFiles(r, { 'a.txt': 'one\n' }, true),
        head: await commitFiles(r, { [TRUST_PATH]: store }),
      };
    },
    repo,
  );
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
/** A clean filter that makes any content look like the committed `one\n`. */
const disguise = (touch: string) => `${touch}; cat >/dev/null; printf 'one\\n'`;

const vectors: { name: string; attributes: string; config: (touch: Hostile['touch']) => string[][] }[] = [
  {
    name: 'a clean filter does not run, and the file compares as its raw bytes',
    attributes: '*.txt filter=disguise',
    config: (touch) => [
      ['filter.disguise.clean', disguise(touch('clean'))],
      ['filter.disguise.smudge', `${touch('smudge')}; cat`],
    ],
  },
  {
    name: 'a driver whose name holds dots and = does not run',
    attributes: '*.txt filter=x.y=z',
    config: (touch) => [['filter.x.y=z.clean', disguise(touch('clean'))]],
  },
  {
    name: 'a long-running process filter is not started',
    attributes: '*.txt filter=proc',
    config: (touch) => [['filter.proc.process', `${touch('process')}; exit 1`]],
  },
  {
    name: 'a required filter neither runs nor makes git fail',
    attributes: '*.txt filter=req',
    config: (touch) => [
      ['filter.req.clean', disguise(touch('required'))],
      ['filter.req.required', 'true'],
    ],
  },
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
  await sm('config', 'filter.sub.clean', disguise(h.touch('submodule-clean')));
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

t.test('a checked-out submodule as the artifact root is still compared, so it cannot pass', async (t) => {
  const h = await withSubmodule(t, 'git directory');
  // Only untracked files under the artifact root are left out; the gitlink is tracked, and what
  // changed inside the checked-out submodule cannot be seen.
  t.equal(await changesSince(h.repo, h.head, 'sm'), null, 'sm is the artifact root: no answer');
  await t.rejects(workingTreeStatus(h.repo, 'sm'), 'workingTreeStatus cannot tell');
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

/** Every command-naming key at once, for the attributes `*.txt filter=f diff=f`. */
const everyVector = (touch: Hostile['touch']) =>
  [
    '[core]',
    `\tfsmonitor = "${touch('fsmonitor')}; false"`,
    `\tsshCommand = "${touch('ssh')}"`,
    `\tpager = "${touch('pager')}"`,
    `\thooksPath = /nonexistent`,
    '\trepositoryformatversion = 1',
    '[extensions]',
    '\tpartialClone = evil',
    '[remote "evil"]',
    `\turl = "ext::sh -c ${touch('fetch').replaceAll(' ', '% ')}"`,
    '\tpromisor = true',
    '[protocol "ext"]',
    '\tallow = always',
    '[filter "f"]',
    `\tclean = "${disguise(touch('clean')).replaceAll('\\', '\\\\')}"`,
    `\tprocess = "${touch('process')}"`,
    '\trequired = true',
    '[diff "f"]',
    `\ttextconv = "${touch('textconv')}; cat"`,
    `\tcommand = "${touch('diff-command')}"`,
    '[diff]',
    `\texternal = "${touch('diff-external')}"`,
    '[core]',
    `\tattributesFile = ${'/dev/null'}`,
    '',
  ].join('\n');

/**
 * The race that broke switching drivers off by name (reading the names, then git reading the
 * config again): a writer replaces `.git/config` in a tight loop, with and without every vector,
 * while the queries run. Git never reads that file, so no marker can appear and every answer is
 * the raw bytes'.
 */
const ROUNDS = 40;

t.test('a config rewritten in a loop while queries run defines nothing for git', async (t) => {
  const h = await repository(t);
  await commitFiles(h.repo, { '.gitattributes': '*.txt filter=f diff=f\n' });
  const head = await h.git('rev-parse', 'HEAD');
  const config = join(h.repo, '.git/config');
  const plain = await readFile(config, 'utf8');
  await writeFile(join(h.repo, '.git/hostile'), plain + everyVector(h.touch));
  await writeFile(join(h.repo, '.git/plain'), plain);
  await modify(join(h.repo, 'a.txt'));
  // The writer swaps the hostile and the plain config into place about every millisecond (a
  // rename, so git never reads half a file), and reports how many swaps it made when stopped.
  const writer = execa(
    process.execPath,
    [
      '-e',
      `const fs = require('node:fs');
       const [g] = process.argv.slice(1);
       const pause = new Int32Array(new SharedArrayBuffer(4));
       let swaps = 0;
       process.on('SIGTERM', () => { process.stdout.write(String(swaps)); process.exit(0); });
       setImmediate(function loop() {
         for (let i = 0; i < 100; i++) {
           const from = i % 2 === 0 ? 'hostile' : 'plain';
           fs.copyFileSync(g + '/' + from, g + '/next'); fs.renameSync(g + '/next', g + '/config');
           Atomics.wait(pause, 0, 0, 0.5);
           swaps++;
         }
         setImmediate(loop);
       });`,
      join(h.repo, '.git'),
    ],
    { reject: false, extendEnv: false, env: { PATH: process.env['PATH'] ?? '' } },
  );
  t.teardown(() => {
    writer.kill('SIGKILL');
  });
  // Each round starts several git processes while the config is swapped about every millisecond:
  // one that read the hostile config would run a driver, and the markers would show it.
  for (let i = 0; i < ROUNDS; i++) {
    const [changed, status] = await Promise.all([
      changesSince(h.repo, head, null),
      workingTreeStatus(h.repo, null),
    ]);
    if (JSON.stringify(changed) !== '["a.txt"]' || statusChangedPaths(status).join() !== 'a.txt') {
      t.fail(`query ${i}: ${JSON.stringify(changed)} ${statusChangedPaths(status).join()}`);
      break;
    }
  }
  writer.kill('SIGTERM');
  const swaps = Number((await writer).stdout);
  t.ok(swaps >= 1000, `the writer swapped the config ${swaps} times while the queries ran`);
  t.same(await readdir(h.markers), [], 'no command of any config the writer wrote ran');
  t.pass(`${ROUNDS} rounds of changesSince and workingTreeStatus compared raw bytes`);
  // The writer was live: plain git with the hostile config runs its drivers.
  await writeFile(config, plain + everyVector(h.touch));
  await execa('git', ['status', '--porcelain'], { cwd: h.repo, reject: false });
  t.not((await readdir(h.markers)).length, 0, 'control: plain git runs the config the writer wrote');
});

t.test('a .gitconfig in HOME defines nothing for git either', async (t) => {
  const h = await repository(t);
  const home = join(h.repo, '..', 'home');
  await mkdir(home);
  await writeFile(
    join(home, '.gitconfig'),
    everyVector(h.touch).replace('\trepositoryformatversion = 1\n', ''),
  );
  await commitFiles(h.repo, { '.gitattributes': '*.txt filter=f diff=f\n' });
  h.head = await h.git('rev-parse', 'HEAD');
  await modify(join(h.repo, 'a.txt'));
  const saved = process.env['HOME'];
  process.env['HOME'] = home;
  t.teardown(() => {
    process.env['HOME'] = saved;
  });
  await driveAll(t, h, ['a.txt']);
});

/**
 * Settings that run nothing yet change what git compares: in a per-user config, `core.fileMode`
 * and `core.symlinks` off would hide a script made executable and a link replaced by a file.
 */
t.test('nor can a .gitconfig in HOME make git overlook a mode or a type change', async (t) => {
  const h = await repository(t);
  await symlink('a.txt', join(h.repo, 'link'));
  const head = await commitFiles(h.repo, { 'run.sh': 'echo ok\n' });
  const home = join(h.repo, '..', 'home');
  await mkdir(home);
  await writeFile(join(home, '.gitconfig'), '[core]\n\tfileMode = false\n\tsymlinks = false\n');
  await chmod(join(h.repo, 'run.sh'), 0o755);
  await unlink(join(h.repo, 'link'));
  await writeFile(join(h.repo, 'link'), 'a.txt');
  const saved = process.env['HOME'];
  process.env['HOME'] = home;
  t.teardown(() => {
    process.env['HOME'] = saved;
  });
  t.same((await changesSince(h.repo, head, null))?.sort(), ['link', 'run.sh']);
  t.same(statusChangedPaths(await workingTreeStatus(h.repo, null)).sort(), ['link', 'run.sh']);
});

t.test('a sha256 repository is read with its object format', async (t) => {
  const base = await realpath(await mkdtemp(join(tmpdir(), 'harness-hostile-')));
  t.teardown(() => rm(base, { recursive: true, force: true }));
  const git = gitIn(base);
  await git('init', '-q', '--object-format=sha256');
  const first = await commitFiles(base, { 'a.txt': 'one\n' });
  const second = await commitFiles(base, { 'b.txt': 'two\n' });
  t.equal(second.length, 64);
  t.equal(await headCommit(base), second, 'headCommit');
  t.ok(await commitExists(base, first), 'commitExists');
  t.ok(await isAncestor(base, first, second), 'isAncestor');
  t.equal(await treeOf(base, second), await git('rev-parse', 'HEAD^{tree}'), 'treeOf');
  t.same(await showCommitted(base, 'b.txt'), Buffer.from('two\n'), 'showCommitted');
  await writeFile(join(base, 'a.txt'), 'changed\n');
  t.same(await changesSince(base, first, null), ['a.txt', 'b.txt'], 'changesSince');
  t.same(statusChangedPaths(await workingTreeStatus(base, null)), ['a.txt'], 'workingTreeStatus');
});

t.test('a repository format or extension value git and the bridge do not both know: no answer', async (t) => {
  for (const [key, value] of [
    ['core.repositoryformatversion', '2'],
    ['extensions.objectformat', 'sha512'],
  ] as const) {
    const h = await repository(t);
    await h.git('config', 'core.repositoryformatversion', '1');
    await h.git('config', key, value);
    t.equal(await headCommit(h.repo), null, `${key}=${value}: headCommit`);
    t.equal(await changesSince(h.repo, h.head, null), null, `${key}=${value}: changesSince`);
  }
});

/**
 * A config value can hold a newline (`\n` escaped in the file): copied as it is, it would add lines
 * of the agent's choosing to the config the bridge writes, a filter definition among them.
 */
t.test('an extension value cannot add lines to the shadow config', async (t) => {
  for (const name of ['objectformat', 'refstorage']) {
    const h = await repository(t);
    await commitFiles(h.repo, { '.gitattributes': '*.txt filter=f\n' });
    const head = await h.git('rev-parse', 'HEAD');
    await h.git('config', 'core.repositoryformatversion', '1');
    const injected = `${name === 'objectformat' ? 'sha1' : 'files'}\n[filter "f"]\n\tclean = ${disguise(h.touch('injected'))}`;
    await h.git('config', `extensions.${name}`, injected);
    await modify(join(h.repo, 'a.txt'));
    t.equal(await changesSince(h.repo, head, null), null, `extensions.${name}: no answer`);
    t.same(await readdir(h.markers), [], `extensions.${name}: nothing ran`);
  }
});

t.test('a linked worktree is read from its own HEAD and index and the shared objects', async (t) => {
  const h = await repository(t);
  const wt = join(h.repo, '..', 'wt');
  await h.git('worktree', 'add', '-q', '--detach', wt, h.first);
  await h.git('config', 'extensions.worktreeConfig', 'true');
  await h.git('config', 'core.repositoryformatversion', '1');
  await writeFile(join(wt, '.gitattributes'), '*.txt filter=f\n');
  await gitIn(wt)('config', '--worktree', 'filter.f.clean', disguise(h.touch('worktree-clean')));
  await h.git('config', 'filter.f.clean', disguise(h.touch('common-clean')));
  await modify(join(wt, 'a.txt'));
  t.equal(await headCommit(wt), h.first, 'its HEAD, not the main work tree one');
  t.same((await changesSince(wt, h.first, null))?.sort(), ['.gitattributes', 'a.txt'], 'its raw bytes');
  t.same(statusChangedPaths(await workingTreeStatus(wt, null)).sort(), ['.gitattributes', 'a.txt']);
  t.ok(await isAncestor(wt, h.first, h.head), 'the shared objects and refs');
  t.same(await readdir(h.markers), [], 'no command of either config ran');
});

/** A later mtime, so git re-reads the file rather than trusting the index's stat data. */
async function touchLater(path: string): Promise<void> {
  const later = new Date(Date.now() + 10_000);
  await utimes(path, later, later);
}

t.test('work-tree attributes convert nothing: every change is seen as raw bytes', async (t) => {
  const tmp = async () => realpath(await mkdtemp(join(tmpdir(), 'harness-raw-')));
  t.test('a committed `ident` attribute does not hide an edit inside `$Id$`', async (t) => {
    const repo = await tmp();
    t.teardown(() => rm(repo, { recursive: true, force: true }));
    const proven = await commitFiles(
      repo,
      { '.gitattributes': '*.js ident\n', 'app.js': 'const version = "$Id$";\n' },
      true,
    );
    // Clean-converts back to `$Id$`: with the attribute honoured, git sees the proven blob.
    await writeFile(join(repo, 'app.js'), 'const version = "$Id: "; process.exit(3); "$";\n');
    await touchLater(join(repo, 'app.js'));
    t.same(await changesSince(repo, proven, null), ['app.js']);
    t.same(statusChangedPaths(await workingTreeStatus(repo, null)), ['app.js']);
  });
  t.test('nor does an untracked, ignored `.gitattributes` added after the proof', async (t) => {
    const repo = await tmp();
    t.teardown(() => rm(repo, { recursive: true, force: true }));
    const proven = await commitFiles(
      repo,
      { '.gitignore': '.*\n!.gitignore\n', 'app.js': 'const version = "$Id$";\n' },
      true,
    );
    await writeFile(join(repo, '.gitattributes'), '* ident\n');
    await writeFile(join(repo, 'app.js'), 'const version = "$Id: "; process.exit(3); "$";\n');
    await touchLater(join(repo, 'app.js'));
    t.same(await changesSince(repo, proven, null), ['app.js']);
  });
  t.test('nor per-user ignore and attributes files under HOME', async (t) => {
    const repo = await tmp();
    const home = await tmp();
    t.teardown(() => Promise.all([repo, home].map((d) => rm(d, { recursive: true, force: true }))));
    const proven = await commitFiles(repo, { 'app.js': 'const version = "$Id$";\n' }, true);
    await mkdir(join(home, '.config', 'git'), { recursive: true });
    await writeFile(join(home, '.config', 'git', 'ignore'), 'evil.js\n');
    await writeFile(join(home, '.config', 'git', 'attributes'), '* ident\n');
    const saved = process.env['HOME'];
    process.env['HOME'] = home;
    t.teardown(() => {
      process.env['HOME'] = saved;
    });
    await writeFile(join(repo, 'evil.js'), 'boom\n');
    await writeFile(join(repo, 'app.js'), 'const version = "$Id: "; process.exit(3); "$";\n');
    await touchLater(join(repo, 'app.js'));
    t.same((await changesSince(repo, proven, null))?.sort(), ['app.js', 'evil.js']);
    t.same(statusChangedPaths(await workingTreeStatus(repo, null)).sort(), ['app.js', 'evil.js']);
  });
  t.end();
});

/**
 * The index's stat data are the agent's: an entry naming the proven blob with the stat data of the
 * edited file makes git take the file as unchanged without reading it. The comparisons hash every
 * file through a private index instead.
 */
t.test(
  "an index entry pairing the proven object name with an edited file's stat data hides nothing",
  async (t) => {
    const h = await repository(t);
    await writeFile(join(h.repo, 'a.txt'), 'six!\n');
    await forgeIndexEntry(h.repo, 'a.txt', await h.git('rev-parse', `${h.head}:a.txt`), h.git);
    t.equal(await h.git('status', '--porcelain'), '', 'control: plain git status sees no change');
    t.equal(await h.git('diff', '--name-only', h.head), '', 'control: nor does plain git diff');
    const forged = await readFile(join(h.repo, '.git', 'index'));
    t.same(await changesSince(h.repo, h.head, null), ['a.txt'], 'changesSince');
    t.same(statusChangedPaths(await workingTreeStatus(h.repo, null)), ['a.txt'], 'workingTreeStatus');
    t.same(await uncomparedPaths(h.repo, null), [], 'no flag is set: nothing is reported unread');
    t.same(await readFile(join(h.repo, '.git', 'index')), forged, "the agent's index is not written");
  },
);

t.test('staged changes still count against the proven commit', async (t) => {
  const h = await repository(t);
  await writeFile(join(h.repo, '.gitignore'), '*.log\n');
  await writeFile(join(h.repo, 'a.txt'), 'two\n');
  await writeFile(join(h.repo, 'forced.log'), 'staged, though ignored\n');
  await h.git('add', '-f', '.gitignore', 'a.txt', 'forced.log');
  t.same((await changesSince(h.repo, h.head, null))?.sort(), ['.gitignore', 'a.txt', 'forced.log']);
  const status = (await workingTreeStatus(h.repo, null)).toString('utf8');
  t.match(
    status,
    /\x001 M\. N\.\.\. 100644 100644 100644 [0-9a-f]{40} [0-9a-f]{40} a\.txt\0/,
    'the index change',
  );
  t.match(status, /\x001 A\. N\.\.\. 000000 100644 100644 0{40} [0-9a-f]{40} forced\.log\0/);
});
