import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { execa } from '#execa';
import { GitExecutableError, gitExecutable, resolveGit, useGit } from '../src/validators/git-executable.js';
import { createFinishLineGate } from '../src/validators/runner.js';
import { ev, makeTestEnv } from './helpers/bridge.js';
import { CLI, exitOf } from './helpers/cli.js';
import { buildFixture } from './helpers/finish-line-fixture.js';
import { spawnBridge } from './helpers/spawned-bridge.js';

/**
 * Issue 28 item 6: PATH on a developer machine often starts with directories the user writes, and
 * an agent running as that user can put a `git` there that answers every repository question the
 * finish line asks. A `git` planted first on PATH, in a directory under the temporary directory,
 * leaves a marker when it runs: the bridge passes it over (and says so), HARNESS_GIT naming it
 * stops startup, and the validator child runs the git its parent resolved with a fixed PATH. This
 * file changes PATH and the git to run in this process: it stays top-level.
 */
const base = await realpath(await mkdtemp(join(tmpdir(), 'harness-planted-git-')));
t.teardown(() => rm(base, { recursive: true, force: true }));
const realGit = await realpath((await execa('sh', ['-c', 'command -v git'])).stdout.trim());
const planted = join(base, 'planted');
const marker = join(base, 'planted-git-ran');
await mkdir(planted);
await writeFile(join(planted, 'git'), `#!/bin/sh\necho "$*" >> ${marker}\nexec ${realGit} "$@"\n`);
await chmod(join(planted, 'git'), 0o755);
const callerPath = `${planted}:${process.env['PATH'] ?? ''}`;

t.test('resolution passes over a git in a directory the user or others can write', async (t) => {
  const resolved = resolveGit({ PATH: callerPath });
  t.equal(resolved.path, realGit, 'the trusted git further down PATH');
  t.equal(resolved.skipped.length, 1);
  t.ok(resolved.skipped[0]?.startsWith(`${join(planted, 'git')} (`), `passed over: ${resolved.skipped[0]}`);
  t.throws(() => resolveGit({ PATH: planted }), GitExecutableError, 'no trusted git at all refuses');
  t.throws(() => resolveGit({ PATH: '' }), GitExecutableError, 'an empty PATH holds no git');
  t.equal(resolveGit({ PATH: `relative-dir:${process.env['PATH'] ?? ''}` }).path, realGit);
  t.equal(resolveGit({ HARNESS_GIT: realGit, PATH: planted }).path, realGit, 'HARNESS_GIT wins over PATH');
  for (const chosen of [join(planted, 'git'), 'git', join(base, 'absent', 'git'), planted]) {
    t.throws(() => resolveGit({ HARNESS_GIT: chosen, PATH: callerPath }), GitExecutableError, chosen);
  }
  t.notOk(existsSync(marker), 'the planted git never ran');
});

t.test('the validator child runs the git its parent resolved, with a fixed PATH', async (t) => {
  const f = await buildFixture(t);
  // Recorded by a git that is not called `git`: a child that looked git up by name would miss it.
  const named = join(base, 'named');
  const calls = join(base, 'calls');
  await mkdir(named);
  await mkdir(calls);
  const recorder = join(named, 'git-recording');
  await writeFile(
    recorder,
    `#!/bin/sh\ntr '\\0' '\\n' < /proc/$$/environ | grep '^PATH=' > "$(mktemp '${calls}/call.XXXXXX')"\nexec ${realGit} "$@"\n`,
  );
  await chmod(recorder, 0o755);
  const savedPath = process.env['PATH'];
  const savedGit = gitExecutable();
  process.env['PATH'] = callerPath;
  useGit(recorder);
  t.teardown(() => {
    process.env['PATH'] = savedPath;
    useGit(savedGit);
  });
  const gate = createFinishLineGate({ concurrency: 1, deadlineMs: 60_000 });
  t.same(await gate(f.facts, f.env), [], 'the fixture completes');
  const seen = await Promise.all((await readdir(calls)).map((n) => readFile(join(calls, n), 'utf8')));
  t.ok(seen.length > 0, `${seen.length} git calls from the child`);
  t.same(
    new Set(seen),
    new Set([`PATH=${named}:/usr/bin:/bin\n`]),
    "each with the fixed PATH, not the caller's",
  );
  t.notOk(existsSync(marker), 'the planted git never ran');
});

t.test('harness bridge with a planted git first on PATH', async (t) => {
  const te = await makeTestEnv();
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  te.env['PATH'] = callerPath;
  // Startup checks the trust pin against the store at HEAD, which it asks git for.
  const b = await spawnBridge(t, te);
  t.equal((await b.req('POST', '/runs/r/events', ev())).status, 201, 'it serves');
  t.match(
    b.stderr(),
    `git is ${realGit}; passed over ${join(planted, 'git')} (`,
    'it says which git it runs',
  );
  t.notOk(existsSync(marker), 'the planted git never ran');
});

t.test('HARNESS_GIT in a directory the user or others can write stops startup', async (t) => {
  const te = await makeTestEnv();
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  const child = spawn(process.execPath, [CLI, 'bridge'], {
    env: { ...te.env, HARNESS_GIT: join(planted, 'git') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const { code, stderr } = await exitOf(child);
  t.equal(code, 2);
  t.match(stderr, /^harness: bridge refuses to start: HARNESS_GIT \S+ cannot be trusted: .+\n$/);
  t.equal(stderr.split('\n').length, 2, 'one line');
  t.notOk(existsSync(marker), 'the planted git never ran');
});
