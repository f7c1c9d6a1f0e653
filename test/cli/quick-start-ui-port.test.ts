import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { secret } from '../helpers/bridge.js';
import { CLI, exitOf } from '../helpers/cli.js';

/**
 * `harness start` (`npm start`) is the bridge plus its UI child. A UI that cannot bind its port
 * exits 2 with one line naming HARNESS_UI_PORT (CONTRACT 8); the quick start then stops the bridge
 * and exits 2 too, saying which variable to change, rather than leaving a bridge with no UI.
 * The UI child gets its own environment only: the access token, the bridge URL and its own
 * settings, never the variables (or credentials) of the shell that ran the quick start.
 * HOME is a fresh directory so the development credentials are made there, not in the user's.
 */
async function home(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'harness-start-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

const startEnv = (dir: string, uiPort: string) => ({
  PATH: process.env['PATH'] ?? '',
  HOME: dir,
  HARNESS_BRIDGE_PORT: '0',
  HARNESS_UI_PORT: uiPort,
  HARNESS_WORKERS: '1',
});

/** `harness start` with `env`, once its UI listens (or it exited first): its output so far and its exit. */
async function serving(env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [CLI, 'start'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  const ready = new Promise<void>((resolve) => {
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
      if (stdout.includes('harness ui listening at')) resolve();
    });
  });
  const exited = exitOf(child);
  await Promise.race([ready, once(child, 'exit')]);
  return { child, stdout, exited };
}

t.test('a UI port in use stops the quick start: exit 2 naming HARNESS_UI_PORT, bridge closed', async (t) => {
  const dir = await home(t);
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => taken.close(() => resolve())));
  const port = String((taken.address() as AddressInfo).port);
  const child = spawn(process.execPath, [CLI, 'start'], {
    env: startEnv(dir, port),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  const { code, stderr } = await exitOf(child);
  t.equal(code, 2, `${stdout}\n${stderr}`);
  t.match(stdout, /^Server listening at http:\/\/127\.0\.0\.1:\d+$/m, 'the bridge had started');
  t.match(stderr, new RegExp(`^harness: harness ui refuses to start: HARNESS_UI_PORT ${port} cannot`, 'm'));
  t.match(
    stderr,
    new RegExp(
      `^harness start: the UI server stopped \\(exit code 2\\), so the bridge is stopped too \\(its own message says why; if HARNESS_UI_PORT ${port} is in use`,
      'm',
    ),
  );
  t.notMatch(stderr, /^\s+at /m, 'no stack trace');
  const devEnv = await readFile(join(dir, '.harness', 'dev', 'dev.env'), 'utf8');
  for (const line of devEnv.split('\n').filter((l) => l.startsWith('HARNESS_') && l.includes('TOKEN'))) {
    t.notOk(stderr.includes(line.split('=')[1] ?? ''), 'no credential echoed');
  }
  t.notOk(
    (await readdir(join(dir, '.harness', 'dev', 'runs'))).includes('bridge.lease'),
    'the bridge closed: its lease is released',
  );
});

t.test(
  'the UI settings reach the UI child: a proxy timeout out of range stops the quick start',
  async (t) => {
    const dir = await home(t);
    const child = spawn(process.execPath, [CLI, 'start'], {
      env: { ...startEnv(dir, '0'), HARNESS_BRIDGE_PROXY_TIMEOUT_MS: '5' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.resume();
    const { code, stderr } = await exitOf(child);
    t.equal(code, 2, stderr);
    t.match(stderr, /^harness: .*HARNESS_BRIDGE_PROXY_TIMEOUT_MS/m, 'the UI names the variable');
    t.match(stderr, /^harness start: the UI server stopped \(exit code 2\)/m);
  },
);

t.test('with both ports free the quick start serves until SIGTERM, then exits 0', async (t) => {
  const dir = await home(t);
  const { child, stdout, exited } = await serving(startEnv(dir, '0'));
  t.match(stdout, /harness ui listening at http:\/\/127\.0\.0\.1:\d+\//);
  const devDir = join(dir, '.harness', 'dev');
  for (const name of ['dev.env', 'agent.env', 'approve.env'])
    t.match(stdout, `created ${join(devDir, name)} (mode 0600): for `, `${name} created and named`);
  t.match(
    stdout,
    `\ncreated a trust store repository in ${join(devDir, 'repo')}\n`,
    'the repository is named as harness init names it',
  );
  t.match(
    stdout,
    `approval shell: (set -a; . ${join(devDir, 'approve.env')}; set +a; export HARNESS_BRIDGE_URL=http://127.0.0.1:`,
    'the approval shell sources approve.env in a subshell, told the bridge URL it is not the default',
  );
  t.notMatch(stdout, /\. \S*dev\.env/, 'no shell is told to source the bridge file');
  t.match(
    stdout,
    /set \+a; export HARNESS_BRIDGE_URL=\S+; harness emit \.\.\./,
    'the command npm link puts on PATH, as the README runs it',
  );
  child.kill('SIGTERM');
  const { code, stderr } = await exited;
  t.equal(code, 0, stderr);
  t.notMatch(stderr, /UI server stopped/, 'a requested stop is not reported as a UI failure');
});

/** The environment a running process started with, by variable name (Linux /proc). */
async function environOf(pid: number): Promise<Map<string, string>> {
  const text = await readFile(`/proc/${pid}/environ`, 'utf8');
  return new Map(
    text
      .split('\0')
      .filter((e) => e !== '')
      .map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)] as [string, string]),
  );
}

/** The pid of `parent`'s child running `harness ui` (Linux /proc), or undefined. */
async function uiChildOf(parent: number): Promise<number | undefined> {
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    // The fields after the parenthesised command name: state, then the parent's pid.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const cmdline = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
    if (ppid === parent && cmdline.endsWith('\0ui\0')) return Number(name);
  }
  return undefined;
}

t.test("the UI child gets only its own environment, none of the quick start's shell", async (t) => {
  const dir = await home(t);
  // A shell that had sourced dev.env and approve.env before `npm start`, plus a variable of its own.
  const shell = {
    ...startEnv(dir, '0'),
    HARNESS_BRIDGE_INTEGRITY_KEY: secret(),
    HARNESS_HUMAN_APPROVAL_TOKEN: secret(),
    SHELL_ONLY: 'the shell that ran npm start',
  };
  const { child, stdout, exited } = await serving(shell);
  // The UI refuses to start holding the integrity key or the human token: had it been handed the
  // shell's environment, it would have stopped the quick start here.
  t.match(stdout, /harness ui listening at http:\/\/127\.0\.0\.1:\d+\//, 'the UI is serving');
  if (process.platform === 'linux') {
    const ui = await uiChildOf(child.pid!);
    t.ok(ui, 'the UI child is found');
    const env = ui === undefined ? new Map<string, string>() : await environOf(ui);
    // Under `npm run coverage` Node itself hands NODE_V8_COVERAGE to every child it starts.
    env.delete('NODE_V8_COVERAGE');
    t.same(
      [...env.keys()].sort(),
      ['HARNESS_BRIDGE_ACCESS_TOKEN', 'HARNESS_BRIDGE_URL', 'HARNESS_UI_PORT', 'PATH'],
      'the access token, the bridge URL, its port setting and PATH: nothing else',
    );
    const dev = await readFile(join(dir, '.harness', 'dev', 'dev.env'), 'utf8');
    t.match(
      dev,
      `HARNESS_BRIDGE_ACCESS_TOKEN=${env.get('HARNESS_BRIDGE_ACCESS_TOKEN')}\n`,
      "dev.env's token",
    );
  }
  child.kill('SIGTERM');
  const { code, stderr } = await exited;
  t.equal(code, 0, stderr);
});
