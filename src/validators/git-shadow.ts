import { constants } from 'node:fs';
import { mkdir, mkdtemp, open, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { execa } from '#execa';
import { gitExecutable } from './git-executable.js';

/**
 * The git directory git is pointed at for every query: a private one the bridge builds per call,
 * so that git never reads the repository's own `.git/config`, `.git/info/*` or hooks, which the
 * supervised agent writes. A config git never reads defines no filter, textconv, fsmonitor,
 * sshCommand, promisor or any other command, and nothing can change it between a read of ours and
 * git's (the race that broke switching filter drivers off by name).
 *
 * It holds (in a fresh `mkdtemp` directory, mode 0700, removed after the call):
 * - `config`, written here: `core.repositoryformatversion`, `core.bare=false` and, for a version 1
 *   repository, `extensions.objectformat` and `extensions.refstorage`, each copied from the real
 *   config only when its value is one of a few known ones (anything else: no query). Nothing else.
 * - `HEAD`, a copy of the real one (git accepts only a regular file or a `refs/` symlink there).
 * - symlinks to the real `refs`, `packed-refs`, `shallow`, `reftable` and `sharedindex.*` (shared
 *   refs and the shallow list from the common directory of a linked worktree, HEAD and the index
 *   from its own git directory). The objects and the index come through GIT_OBJECT_DIRECTORY and
 *   GIT_INDEX_FILE (an alternate named relative to the object directory resolves against the real
 *   one).
 * - `info/attributes`, written here, switching every conversion off (RAW_BYTES); nothing else in
 *   `info/` (no `info/exclude`, `info/grafts`), no hooks, no `commondir`.
 * System and global config are off too (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null,
 * git-isolation.ts), so git runs with no configuration but this one and the `-c` options.
 *
 * What stays the agent's: the objects, refs and index (data git reads, never runs), the work
 * tree's `.gitattributes` (which can name a driver, but none is defined) and `.gitignore` files.
 * A query comparing the work tree with the index does not take the agent's index as it is: its
 * entries are copied, without their stat data, into an `index` of the bridge's in this directory,
 * and git hashes every file into it (git.ts, gitHashingWorkTree).
 */
export interface Shadow {
  dir: string;
  env: Record<string, string>;
  dispose: () => Promise<void>;
}

const SMALL_MAX = 4096;

/**
 * The bytes of a small regular file, never blocking on a FIFO or a device the agent put there;
 * undefined when it does not exist, null when it is anything else.
 */
async function readSmall(path: string): Promise<string | null | undefined> {
  const fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK).catch((e: NodeJS.ErrnoException) =>
    e.code === 'ENOENT' ? undefined : null,
  );
  if (fh === undefined || fh === null) return fh;
  try {
    const st = await fh.stat();
    if (!st.isFile() || st.size > SMALL_MAX) return null;
    const buf = Buffer.alloc(st.size);
    const { bytesRead } = await fh.read(buf, 0, st.size, 0);
    return buf.subarray(0, bytesRead).toString('utf8');
  } finally {
    await fh.close();
  }
}

const trimEol = (s: string) => s.replace(/[\r\n]+$/, '');

/**
 * The git directory and common directory of the work tree at `top`, resolved as git resolves
 * them: `<top>/.git` is the directory, or a `gitdir: <path>` file (a linked worktree, an absorbed
 * submodule) naming it relative to `top`; a `commondir` file in it names the common directory
 * relative to it. Null when that cannot be read.
 */
export async function realRepository(top: string): Promise<{ gitDir: string; commonDir: string } | null> {
  const dotGit = join(top, '.git');
  const st = await stat(dotGit).catch(() => null);
  let gitDir: string;
  if (st?.isDirectory()) gitDir = dotGit;
  else if (st?.isFile()) {
    const m = /^gitdir: (.+)$/.exec(trimEol((await readSmall(dotGit)) ?? ''));
    if (m === null) return null;
    gitDir = resolve(top, m[1]!);
  } else return null;
  const common = await readSmall(join(gitDir, 'commondir'));
  if (common === null) return null;
  return { gitDir, commonDir: common === undefined ? gitDir : resolve(gitDir, trimEol(common)) };
}

const ALLOWED: Readonly<Record<string, readonly string[]>> = {
  'core.repositoryformatversion': ['0', '1'],
  'extensions.objectformat': ['sha1', 'sha256'],
  'extensions.refstorage': ['files', 'reftable'],
};

/**
 * The config the shadow directory holds, from the values of the real one (`git config --file`,
 * which runs nothing and follows no include, as git's own repository-format check does). Cached by
 * the file's identity: the values decide only how git reads the objects and refs, never what runs,
 * so a stale answer can only make a query fail. Null when a value is not one git and this code
 * both know.
 */
const configs = new Map<string, string | null>();

async function shadowConfig(
  path: string,
  scratch: string,
  env: Record<string, string>,
): Promise<string | null> {
  const st = await stat(path, { bigint: true }).catch(() => null);
  if (st !== null && !st.isFile()) return null;
  const key = st === null ? '' : `${path}\0${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
  if (configs.has(key)) return configs.get(key)!;
  const values = new Map<string, string>();
  if (st !== null) {
    const r = await execa(
      gitExecutable(),
      [
        'config',
        '--file',
        path,
        '--no-includes',
        '--null',
        '--get-regexp',
        '^(core\\.repositoryformatversion|extensions\\.)',
      ],
      // In an empty directory that no repository discovery can climb out of.
      {
        cwd: scratch,
        reject: false,
        stdin: 'ignore',
        timeout: 15_000,
        extendEnv: false,
        env: { ...env, GIT_CEILING_DIRECTORIES: dirname(scratch) },
      },
    );
    if (r.exitCode !== 0 && !(r.exitCode === 1 && r.stdout === '')) return null;
    // `name\nvalue\0`, the last one of a name wins.
    for (const record of r.stdout.split('\0').filter(Boolean)) {
      const nl = record.indexOf('\n');
      values.set(nl === -1 ? record : record.slice(0, nl), nl === -1 ? '' : record.slice(nl + 1));
    }
  }
  const lines = ['[core]'];
  const version = values.get('core.repositoryformatversion') ?? '0';
  if (!ALLOWED['core.repositoryformatversion']!.includes(version)) return remember(key, null);
  // No per-user ignore or attributes file either: with no value, git reads the XDG defaults under
  // HOME (`~/.config/git/ignore`, `~/.config/git/attributes`), which GIT_CONFIG_GLOBAL leaves on.
  lines.push(
    `\trepositoryformatversion = ${version}`,
    '\tbare = false',
    '\texcludesFile = /dev/null',
    '\tattributesFile = /dev/null',
  );
  if (version === '1') {
    const extensions: string[] = [];
    for (const name of ['extensions.objectformat', 'extensions.refstorage']) {
      const value = values.get(name);
      if (value === undefined) continue;
      if (!ALLOWED[name]!.includes(value)) return remember(key, null);
      extensions.push(`\t${name.slice('extensions.'.length)} = ${value}`);
    }
    if (extensions.length > 0) lines.push('[extensions]', ...extensions);
  }
  return remember(key, `${lines.join('\n')}\n`);
}

function remember(key: string, config: string | null): string | null {
  if (configs.size >= 64) configs.clear();
  configs.set(key, config);
  return config;
}

const HEAD = /^(ref: refs\/[^\0\n]+|[0-9a-f]{40}|[0-9a-f]{64})$/;

/**
 * `info/attributes`, which outranks every `.gitattributes` of the work tree: no conversion of any
 * kind between the work tree and the index, so git compares a file's raw bytes. The work tree's
 * attributes are the agent's: `ident` (a `$Id: ...$` line clean-converts to `$Id$`), `text`/`eol`
 * or `working-tree-encoding` would let edited bytes convert back to the proven blob.
 */
const RAW_BYTES = '* -text -eol -crlf -ident -filter -working-tree-encoding\n';

/** The shadow git directory for the work tree at `top`, or null when the repository cannot be read. */
export async function shadowRepository(top: string, env: Record<string, string>): Promise<Shadow | null> {
  const real = await realRepository(top);
  if (real === null) return null;
  const dir = await mkdtemp(join(tmpdir(), 'harness-git-'));
  const dispose = () => rm(dir, { recursive: true, force: true });
  try {
    const [config, head, names] = await Promise.all([
      shadowConfig(join(real.commonDir, 'config'), dir, env),
      readSmall(join(real.gitDir, 'HEAD')),
      readdir(real.gitDir).catch(() => [] as string[]),
    ]);
    const headLine = typeof head === 'string' ? trimEol(head) : null;
    if (config === null || headLine === null || !HEAD.test(headLine)) {
      await dispose();
      return null;
    }
    const shared = ['refs', 'packed-refs', 'shallow', 'reftable'].map((n) => [join(real.commonDir, n), n]);
    const own = names.filter((n) => /^sharedindex\.[0-9a-f]+$/.test(n)).map((n) => [join(real.gitDir, n), n]);
    await mkdir(join(dir, 'info'), { mode: 0o700 });
    await Promise.all([
      writeFile(join(dir, 'config'), config, { flag: 'wx', mode: 0o600 }),
      writeFile(join(dir, 'info', 'attributes'), RAW_BYTES, { flag: 'wx', mode: 0o600 }),
      writeFile(join(dir, 'HEAD'), `${headLine}\n`, { flag: 'wx', mode: 0o600 }),
      ...[...shared, ...own].map(([target, name]) => symlink(target!, join(dir, name!))),
    ]);
    return {
      dir,
      env: {
        GIT_OBJECT_DIRECTORY: join(real.commonDir, 'objects'),
        GIT_INDEX_FILE: join(real.gitDir, 'index'),
      },
      dispose,
    };
  } catch (e) {
    await dispose();
    throw e;
  }
}
