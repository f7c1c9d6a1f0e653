import { once } from 'node:events';
import { chmod, mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { execa } from '#execa';
import { runPaths } from '../../src/storage/paths.js';
import { commitExists, isAncestor, showCommitted } from '../../src/validators/git.js';
import { gitExecutable, useGit } from '../../src/validators/git-executable.js';
import { GIT_ISOLATION_ENV } from '../../src/validators/git-isolation.js';
import { gitIn, makeTestEnv } from '../helpers/bridge.js';
import { appendedRecords } from '../helpers/expect.js';
import { spawnBridge } from '../helpers/spawned-bridge.js';

/**
 * The repository's .git/config is agent-written. Each vector below makes git start a program the
 * config names when git reaches for a transport: here a partial-clone promisor remote turns the
 * lookup of an absent commit (the corrective-work rule's commitExists, the verdict cache key's
 * commit lines) into a lazy fetch. The program writes a marker file; none may appear.
 */
const absent = '1'.repeat(40);

async function promisorRepo(t: Test) {
  const dir = await realpath(await mkdtemp(join(tmpdir(), 'harness-git-exec-')));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const repo = join(dir, 'repo');
  await mkdir(repo);
  const git = gitIn(repo);
  await git('init', '-q');
  await writeFile(join(repo, 'a.txt'), 'a\n');
  await git('add', '.');
  await git('commit', '-q', '-m', 'a');
  await git('config', 'core.repositoryformatversion', '1');
  await git('config', 'extensions.partialClone', 'origin');
  await git('config', 'remote.origin.promisor', 'true');
  const marker = join(dir, 'marker');
  const evil = join(dir, 'evil.sh');
  await writeFile(evil, `#!/bin/sh\necho "$0 $*" >> ${marker}\nexit 1\n`);
  await chmod(evil, 0o755);
  const fired = () => readFile(marker, 'utf8').catch(() => '');
  return { dir, repo, git, evil, fired, head: await git('rev-parse', 'HEAD') };
}

/** The vector is live: plain git, in the same repository, runs the program (then the marker is cleared). */
async function control(t: Test, r: Awaited<ReturnType<typeof promisorRepo>>, args?: string[]) {
  await execa('git', args ?? ['cat-file', '-e', `${absent}^{commit}`], {
    cwd: r.repo,
    reject: false,
    env: { GIT_TERMINAL_PROMPT: '0' },
  });
  t.not(await r.fired(), '', 'control: git without the isolation runs the program');
  await rm(join(r.dir, 'marker'), { force: true });
}

/** Every query that names a commit the agent chose, on an absent one. */
async function lookUpAbsent(repo: string, head: string) {
  await commitExists(repo, absent);
  await isAncestor(repo, absent, head);
  await isAncestor(repo, head, absent);
}

const vectors: [string, (r: Awaited<ReturnType<typeof promisorRepo>>) => Promise<void>][] = [
  [
    'core.sshCommand (ssh://)',
    async ({ git, evil }) => {
      await git('config', 'remote.origin.url', 'ssh://example.invalid/x');
      await git('config', 'core.sshCommand', evil);
    },
  ],
  [
    'remote.<name>.uploadpack (a local path)',
    async ({ git, evil, dir }) => {
      await git('init', '-q', '--bare', join(dir, 'bare'));
      await git('config', 'remote.origin.url', join(dir, 'bare'));
      await git('config', 'remote.origin.uploadpack', evil);
    },
  ],
  [
    'remote.<name>.uploadpack (file://)',
    async ({ git, evil, dir }) => {
      await git('init', '-q', '--bare', join(dir, 'bare'));
      await git('config', 'remote.origin.url', `file://${join(dir, 'bare')}`);
      await git('config', 'remote.origin.uploadpack', evil);
    },
  ],
  [
    'core.gitProxy (git://)',
    async ({ git, evil }) => {
      await git('config', 'remote.origin.url', 'git://example.invalid/x');
      await git('config', 'core.gitProxy', evil);
    },
  ],
  [
    'an ext:: URL the config allows (protocol.ext.allow=always)',
    async ({ git, evil }) => {
      await git('config', 'remote.origin.url', `ext::${evil} %S`);
      await git('config', 'protocol.ext.allow', 'always');
    },
  ],
];

for (const [name, arm] of vectors) {
  t.test(`a lazy fetch through ${name} runs nothing`, async (t) => {
    const r = await promisorRepo(t);
    await arm(r);
    await control(t, r);
    await lookUpAbsent(r.repo, r.head);
    t.equal(await r.fired(), '', 'the bridge git ran nothing');
    t.notOk(await commitExists(r.repo, absent), 'and the commit is absent');
  });
}

t.test('credential.helper and core.askPass (http) run nothing', async (t) => {
  const server = createServer((_req, res) => {
    res.writeHead(401, { 'www-authenticate': 'Basic realm="x"' }).end();
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  t.teardown(() => server.close());
  const { port } = server.address() as { port: number };
  const r = await promisorRepo(t);
  await r.git('config', 'remote.origin.url', `http://127.0.0.1:${port}/x`);
  await r.git('config', 'credential.helper', `!${r.evil}`);
  await r.git('config', 'core.askPass', r.evil);
  await control(t, r);
  await lookUpAbsent(r.repo, r.head);
  t.equal(await r.fired(), '', 'the bridge git ran nothing');
});

t.test('a remote helper named by the config (remote.<name>.vcs) runs nothing', async (t) => {
  const r = await promisorRepo(t);
  // The helper must be on git's PATH, which is fixed (git's own directory, /usr/bin, /bin) and
  // holds no directory the agent writes. Here it sits beside the git named to run, so the bridge's
  // git could find it, and the allow-list is what refuses it.
  const bin = join(r.dir, 'bin');
  await mkdir(bin);
  await writeFile(join(bin, 'git-remote-evil'), await readFile(r.evil));
  await chmod(join(bin, 'git-remote-evil'), 0o755);
  const realGit = (await execa('sh', ['-c', 'command -v git'])).stdout.trim();
  await writeFile(join(bin, 'git'), `#!/bin/sh\nexec ${realGit} "$@"\n`);
  await chmod(join(bin, 'git'), 0o755);
  const saved = process.env['PATH'];
  const savedGit = gitExecutable();
  process.env['PATH'] = `${bin}:${saved ?? ''}`;
  useGit(join(bin, 'git'));
  t.teardown(() => {
    process.env['PATH'] = saved;
    useGit(savedGit);
  });
  await r.git('config', 'remote.origin.url', 'x');
  await r.git('config', 'remote.origin.vcs', 'evil');
  await control(t, r);
  await lookUpAbsent(r.repo, r.head);
  t.equal(await r.fired(), '', 'the bridge git ran nothing');
});

t.test('a blob missing from HEAD is not fetched either (showCommitted, the trust pin)', async (t) => {
  const r = await promisorRepo(t);
  await r.git('config', 'remote.origin.url', 'ssh://example.invalid/x');
  await r.git('config', 'core.sshCommand', r.evil);
  const blob = await r.git('rev-parse', 'HEAD:a.txt');
  await rm(join(r.repo, '.git/objects', blob.slice(0, 2), blob.slice(2)));
  await control(t, r, ['show', 'HEAD:a.txt']);
  t.equal(await showCommitted(r.repo, 'a.txt'), null, 'the missing blob is not there');
  t.equal(await r.fired(), '', 'and nothing ran to fetch it');
});

t.test('the isolation environment alone refuses every transport, local paths included', async (t) => {
  // Without a lazy fetch: an explicit fetch with GIT_ALLOW_PROTOCOL as the bridge sets it.
  const r = await promisorRepo(t);
  await r.git('init', '-q', '--bare', join(r.dir, 'bare'));
  for (const [url, key, value] of [
    ['ssh://example.invalid/x', 'core.sshCommand', r.evil],
    [join(r.dir, 'bare'), 'remote.origin.uploadpack', r.evil],
    [`file://${join(r.dir, 'bare')}`, 'remote.origin.uploadpack', r.evil],
    ['git://example.invalid/x', 'core.gitProxy', r.evil],
  ] as const) {
    await r.git('config', 'remote.origin.url', url);
    await r.git('config', key, value);
    const env = {
      PATH: process.env['PATH'] ?? '',
      GIT_ALLOW_PROTOCOL: GIT_ISOLATION_ENV['GIT_ALLOW_PROTOCOL']!,
    };
    const f = await execa('git', ['fetch', '-q', 'origin'], {
      cwd: r.repo,
      reject: false,
      extendEnv: false,
      env,
    });
    t.not(f.exitCode, 0, `${url}: the fetch fails`);
    t.equal(await r.fired(), '', `${url}: no program ran`);
    await r.git('config', '--unset', key);
  }
});

t.test('the bridge and its validator child run nothing, and no credential leaves', async (t) => {
  // The reviewed attack: a script that walks up its ancestry to the process holding the
  // credentials and copies its environment into the artifact root.
  const te = await makeTestEnv();
  const loot = join(te.artifactRoot, 'loot.txt');
  const evil = join(te.dir, 'evil.sh');
  await writeFile(
    evil,
    `#!/bin/sh
echo ran >> ${loot}
p=$PPID
for i in 1 2 3 4 5 6; do
  if tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null | grep -q '^HARNESS_BRIDGE_INTEGRITY_KEY='; then
    tr '\\0' '\\n' < /proc/$p/environ | grep '^HARNESS_' >> ${loot}
    break
  fi
  p=$(awk '{print $4}' /proc/$p/stat)
done
exit 1
`,
  );
  await chmod(evil, 0o755);
  const git = gitIn(te.repo);
  await git('config', 'core.repositoryformatversion', '1');
  await git('config', 'extensions.partialClone', 'origin');
  await git('config', 'remote.origin.url', 'ssh://example.invalid/x');
  await git('config', 'remote.origin.promisor', 'true');
  await git('config', 'core.sshCommand', evil);
  const b = await spawnBridge(t, te);
  t.teardown(async () => {
    const exited = b.child.exitCode === null ? once(b.child, 'exit') : null;
    b.child.kill('SIGTERM');
    await exited;
    await rm(te.dir, { recursive: true, force: true });
  });
  const base = { actor: 'runtime-a', runMode: 'live', eventSource: 'api', message: 'm', status: 'ok' };
  const post = (body: object) => b.req('POST', '/runs/leak1/events', { ...base, ...body });
  t.equal((await post({ type: 'run.created', nodeId: 'intake', artifactRoot: te.artifactRoot })).status, 201);
  const TS = '2025-01-01T00:00:00.000Z';
  const phase = (commit: string, exitCode: number) => ({
    ...{ commit, command: 'npm test', environmentId: 'e1', runId: 'leak1', exitCode },
    ...{ startedAt: TS, completedAt: TS, outputDigest: `sha256:${'a'.repeat(64)}` },
  });
  await mkdir(join(te.artifactRoot, 'rca'), { recursive: true });
  await writeFile(
    join(te.artifactRoot, 'rca/rca.json'),
    JSON.stringify({
      ...{ schema: 'harness.rca.v1', runId: 'leak1', generatedAt: TS, status: 'confirmed' },
      rootCause: { category: 'logic-error', summary: 's', location: { path: 'a.js' }, evidence: ['e'] },
      regression: { command: 'npm test', environment: { id: 'e1' } },
      preFix: phase(absent, 1),
      postFix: phase('2'.repeat(40), 0),
    }),
  );
  const journal = runPaths(te.dataDir, 'leak1').journal;
  const before = await readFile(journal);
  const done = await post({ type: 'run.completed', nodeId: 'handoff', status: 'passed' });
  t.equal(done.status, 409, 'the completion is refused');
  t.same(
    appendedRecords(t, before, await readFile(journal)).map((r) => r.event.type),
    ['run.blocked'],
    'only the run.blocked is stored',
  );
  t.match(JSON.stringify(done.body), /pre-fix commit 1{40} does not exist/);
  t.equal(await readFile(loot, 'utf8').catch(() => ''), '', 'the script never ran');
});
