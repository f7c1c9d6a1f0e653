import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { execa } from '#execa';
import {
  changesSince,
  commitExists,
  committedObjectId,
  headCommit,
  isAncestor,
  showCommitted,
  treeOf,
  uncomparedPaths,
  workingTreeStatus,
} from '../src/validators/git.js';
import { gitExecutable, useGit } from '../src/validators/git-executable.js';
import { commitFiles, gitIn } from './helpers/bridge.js';

/**
 * Every git process the bridge starts (the queries of src/validators/git.ts, and the config read
 * behind them, git-shadow.ts), seen from the process itself: the git named to run (`useGit`, as
 * startup names the one it resolved) records its arguments and the environment it was started
 * with (/proc/self/environ, before any shell adds to it), then runs git. No credential reaches
 * it, under its name or under another, its PATH is the fixed one (its own directory, /usr/bin,
 * /bin) and never the caller's, and every call carries the isolation environment
 * (git-isolation.ts), so a repository the agent wrote reaches no transport, no replace ref, no
 * system or global config. The recorder is not called `git`, and a `git` first on the caller's
 * PATH would leave a marker: a query that looked git up by name would miss the one named and find
 * that one. Also: each call's shadow directory is removed, a git that never answers is given up
 * on, and output past the bound is no answer. This file changes PATH, TMPDIR, the credentials in
 * process.env and the git to run: it stays top-level.
 */
// The hung-git case waits out git's 15 s deadline by design.
t.setTimeout(120_000);

const SECRETS = {
  HARNESS_BRIDGE_INTEGRITY_KEY: 'integrity-key-value-0123456789',
  HARNESS_BRIDGE_ACCESS_TOKEN: 'access-token-value-0123456789',
};
/** Set but empty: an empty credential value must not scrub the (empty) GIT_ALLOW_PROTOCOL. */
const EMPTY_CREDENTIAL = 'HARNESS_HUMAN_APPROVAL_TOKEN';
/** Spelled out, not imported: dropping one from git-isolation.ts must fail here. */
const ISOLATION = {
  GIT_ALLOW_PROTOCOL: '',
  GIT_NO_LAZY_FETCH: '1',
  GIT_NO_REPLACE_OBJECTS: '1',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_ATTR_NOSYSTEM: '1',
  GIT_TERMINAL_PROMPT: '0',
  GIT_OPTIONAL_LOCKS: '0',
};

const base = await realpath(await mkdtemp(join(tmpdir(), 'harness-git-env-')));
t.teardown(() => rm(base, { recursive: true, force: true }));
const repo = join(base, 'repo');
await mkdir(repo);
const first = await commitFiles(repo, { 'a.txt': 'one\n' }, true);
const head = await commitFiles(repo, { 'b.txt': 'two\n' });
const calls = join(base, 'calls');
const bin = join(base, 'bin');
const callerBin = join(base, 'caller-bin');
const scratch = join(base, 'tmp');
for (const d of [calls, bin, callerBin, scratch]) await mkdir(d);
const realGit = (await execa('sh', ['-c', 'command -v git'])).stdout.trim();
const recorder = join(bin, 'git-recording');
const planted = join(base, 'planted-git-ran');
await writeFile(join(callerBin, 'git'), `#!/bin/sh\necho "$*" >> ${planted}\nexec ${realGit} "$@"\n`);
await chmod(join(callerBin, 'git'), 0o755);
await writeFile(
  recorder,
  `#!/bin/sh
f="${calls}/$$"
cat /proc/$$/environ > "$f.env"
printf '%s\\0' "$@" > "$f.args"
case "$*" in *hang-config*) exec sleep 60 ;; esac
case "$(pwd) $*" in *hang-query*--git-dir=*) exec sleep 60 ;; esac
case "$(pwd) $*" in *status-fails*--porcelain=v2*) exit 128 ;; esac
case "$(pwd) $*" in *flood*--others*) head -c 17000000 /dev/zero | tr '\\0' x; exit 0 ;; esac
exec ${realGit} "$@"
`,
);
await chmod(recorder, 0o755);

const saved = { ...process.env };
const savedGit = gitExecutable();
t.teardown(() => {
  for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
  Object.assign(process.env, saved);
  useGit(savedGit);
});
useGit(recorder);
Object.assign(process.env, SECRETS, {
  [EMPTY_CREDENTIAL]: '',
  NOT_FOR_GIT: 'a parent variable',
  PATH: `${callerBin}:${saved['PATH'] ?? ''}`,
  TMPDIR: scratch,
});

interface Call {
  args: string[];
  env: Map<string, string>;
}
const split = (b: Buffer) => b.toString('utf8').split('\0').slice(0, -1);
async function recorded(): Promise<Call[]> {
  const names = (await readdir(calls)).filter((n) => n.endsWith('.args'));
  return Promise.all(
    names.map(async (n) => {
      const env = split(await readFile(join(calls, n.replace(/\.args$/, '.env'))));
      return {
        args: split(await readFile(join(calls, n))),
        env: new Map(env.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)])),
      };
    }),
  );
}

t.test('every git process gets the isolation environment and no credential', async (t) => {
  t.equal(await headCommit(repo), head);
  t.ok(await commitExists(repo, first));
  t.ok(await isAncestor(repo, first, head));
  t.ok(await treeOf(repo, head));
  t.same(await showCommitted(repo, 'a.txt'), Buffer.from('one\n'));
  t.ok(await committedObjectId(repo, 'a.txt'));
  await writeFile(join(repo, 'a.txt'), 'edited\n');
  t.same(await changesSince(repo, head, null), ['a.txt']);
  t.ok((await workingTreeStatus(repo, null)).length > 0);
  t.same(await uncomparedPaths(repo, null), []);

  const all = await recorded();
  const queries = all.filter((c) => c.args.some((a) => a.startsWith('--git-dir=')));
  const configReads = all.filter((c) => c.args[0] === 'config' && c.args[1] === '--file');
  t.ok(queries.length >= 10, `${queries.length} queries recorded`);
  t.ok(configReads.length >= 1, 'the repository config was read');
  for (const c of [...queries, ...configReads]) {
    const what = c.args[c.args.findIndex((a) => a.startsWith('--work-tree=')) + 1] ?? 'config';
    for (const [name, value] of Object.entries(ISOLATION))
      t.equal(c.env.get(name), value, `${what}: ${name}=${JSON.stringify(value)}`);
    for (const name of [...Object.keys(SECRETS), EMPTY_CREDENTIAL, 'NOT_FOR_GIT'])
      t.notOk(c.env.has(name), `${what}: no ${name}`);
    t.equal(c.env.get('PATH'), `${bin}:/usr/bin:/bin`, `${what}: the fixed PATH, not the caller's`);
    const values = [...c.env.values()];
    for (const value of Object.values(SECRETS))
      t.notOk(values.includes(value), `${what}: no credential value`);
  }
  for (const c of queries) {
    const shown = c.args.join(' ');
    for (const option of ['core.fsmonitor=false', 'core.untrackedCache=false', 'core.hooksPath=/dev/null'])
      t.ok(shown.includes(`-c ${option}`), `-c ${option}: ${shown.slice(0, 80)}`);
    t.notOk(
      c.args.find((a) => a.startsWith('--git-dir='))?.startsWith(`--git-dir=${repo}`),
      'a shadow git dir',
    );
  }
  for (const c of configReads) {
    t.ok(c.args.includes('--no-includes'), 'the config read follows no include');
    t.ok(c.env.has('GIT_CEILING_DIRECTORIES'), 'nor discovers a repository around its scratch directory');
  }
  t.same(await readdir(scratch), [], 'every shadow git directory was removed');
  t.notOk(existsSync(planted), "the git first on the caller's PATH never ran");
});

t.test('a repository no query can read leaves no shadow directory behind', async (t) => {
  const other = join(base, 'unknown-format');
  await mkdir(other);
  await commitFiles(other, { 'a.txt': 'one\n' }, true);
  await gitIn(other)('config', 'core.repositoryformatversion', '2');
  t.equal(await headCommit(other), null, 'no answer');
  t.same(await readdir(scratch), [], 'its shadow directory was removed too');
});

t.test('output past the bound is no answer, never a truncated one', async (t) => {
  const flood = join(base, 'flood');
  await mkdir(flood);
  const proven = await commitFiles(flood, { 'a.txt': 'one\n' }, true);
  // Compared by hand: a failure would otherwise print the 16 MiB listing.
  const listed = await uncomparedPaths(flood, null);
  t.ok(
    listed === null,
    `uncomparedPaths: ${listed === null ? 'no answer' : `${listed.join('').length} bytes`}`,
  );
  const changed = await changesSince(flood, proven, null);
  t.ok(
    changed === null,
    `changesSince: ${changed === null ? 'no answer' : `${changed.join('').length} bytes`}`,
  );
});

t.test('a status git could not give is no answer, never an empty one', async (t) => {
  const dir = join(base, 'status-fails');
  await mkdir(dir);
  await commitFiles(dir, { 'a.txt': 'one\n' }, true);
  await t.rejects(workingTreeStatus(dir, null), /cannot report the working tree status/);
});

t.test('a git that never answers is given up on', async (t) => {
  const stuck = async (name: string) => {
    const dir = join(base, name);
    await mkdir(dir);
    return { dir, commit: await commitFiles(dir, { 'a.txt': 'one\n' }, true) };
  };
  const [config, query] = await Promise.all([stuck('hang-config'), stuck('hang-query')]);
  const started = Date.now();
  const [configAnswer, queryAnswer] = await Promise.all([
    commitExists(config.dir, config.commit),
    commitExists(query.dir, query.commit),
  ]);
  t.equal(configAnswer, false, 'the config read hung: no answer');
  t.equal(queryAnswer, false, 'the query hung: no answer');
  t.ok(Date.now() - started < 30_000, `answered after ${Date.now() - started} ms`);
});
