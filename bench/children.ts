import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { trustStoreDigest } from '../src/server/trust-pin.js';

/** The built `harness` entry (dist/src/cli/main.cjs), which every bridge child runs. */
export const HARNESS_CLI = resolve(
  fileURLToPath(new URL('.', import.meta.url)),
  '..',
  'src',
  'cli',
  'main.cjs',
);

export interface Child {
  proc: ChildProcess;
  pid: number;
  url: string;
  stop: () => Promise<void>;
}

/** Starts `node <args>` and resolves with the URL it prints as `Server listening at <url>`. */
export function startChild(args: string[], env: NodeJS.ProcessEnv, label: string): Promise<Child> {
  const proc = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stderr?.on('data', (d: Buffer) => {
    if (process.env['BENCH_CHILD_STDERR']) process.stderr.write(d);
    err += d.toString();
    if (err.length > 64 * 1024) err = err.slice(-32 * 1024);
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`${label} did not start within 30 s:\n${out}${err}`));
    }, 30_000);
    const onExit = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`${label} exited (${code}) before listening:\n${out}${err}`));
    };
    proc.once('exit', onExit);
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /Server listening at (http:\/\/\S+)/.exec(out);
      if (!m || proc.pid === undefined) return;
      clearTimeout(timer);
      proc.off('exit', onExit);
      proc.stdout?.removeAllListeners('data');
      proc.stdout?.resume();
      const pid = proc.pid;
      const stop = () =>
        new Promise<void>((done) => {
          if (proc.exitCode !== null || proc.signalCode !== null) return done();
          const kill = setTimeout(() => proc.kill('SIGKILL'), 15_000);
          proc.once('exit', () => {
            clearTimeout(kill);
            done();
          });
          proc.kill('SIGTERM');
        });
      resolve({ proc, pid, url: m[1]!, stop });
    });
  });
}

/** Resident set size of a process in MiB (VmRSS, and the peak VmHWM), from /proc. */
export async function rssMiB(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

/** CPU seconds (user + system, all threads) a process has used so far, from /proc/<pid>/stat. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 (utime, stime) in clock ticks; the list here starts at field 3.
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const secret = () => randomBytes(32).toString('base64url');

/**
 * What `harness bridge` needs, made fresh under `dir` the way test/helpers/bridge.ts does it: a
 * committed trust store in a new git repository and its pin, three distinct credentials, a data
 * directory, port 0.
 */
export async function bridgeEnv(dir: string): Promise<NodeJS.ProcessEnv> {
  const repo = join(dir, 'repo');
  await mkdir(join(repo, 'controls'), { recursive: true });
  const text = `${JSON.stringify({ schema: 'harness.review-trust.v1', keys: [] }, null, 2)}\n`;
  await writeFile(join(repo, 'controls', 'review-trust.v1.json'), text);
  const git = (...args: string[]) =>
    execFileSync(
      'git',
      ['-c', 'user.name=bench', '-c', 'user.email=bench@localhost', '-c', 'commit.gpgsign=false', ...args],
      { cwd: repo, stdio: 'ignore' },
    );
  git('init', '-q');
  git('add', '.');
  git('commit', '-q', '-m', 'trust store');
  return {
    PATH: process.env['PATH'] ?? '',
    HOME: dir,
    HARNESS_BRIDGE_INTEGRITY_KEY: secret(),
    HARNESS_BRIDGE_ACCESS_TOKEN: secret(),
    HARNESS_HUMAN_APPROVAL_TOKEN: secret(),
    HARNESS_REVIEW_TRUST_SHA256: trustStoreDigest(text),
    HARNESS_REPO_ROOT: repo,
    HARNESS_DATA_DIR: join(dir, 'data'),
    HARNESS_BRIDGE_PORT: '0',
    HARNESS_WORKERS: '1',
    HARNESS_MAX_EVENTS_PER_RUN: '1000000',
  };
}
