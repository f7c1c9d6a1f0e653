import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { CLI } from './paths.js';

/** `harness watch` as a child, as a user runs it: its stdout records, stderr, and how it ended. */
export interface Watcher {
  child: ChildProcess;
  records: Record<string, any>[];
  stderr: () => string;
  /** Resolves once `count` posted records (those with a seq) were printed; rejects after `ms`. */
  posted: (count: number, ms?: number) => Promise<Record<string, any>[]>;
  /** Sends `signal` and resolves with the exit code once it exited. */
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
}

/** Starts `harness watch runId --root root` and waits for its ready line (`watching`). */
export async function startWatcher(
  t: { teardown(fn: () => unknown): void },
  env: Record<string, string>,
  runId: string,
  root: string,
  extra: string[] = ['--settle-ms', '60'],
): Promise<Watcher> {
  const child = spawn(process.execPath, [CLI, 'watch', runId, '--root', root, ...extra], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = once(child, 'exit');
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const records: Record<string, any>[] = [];
  let err = '';
  let out = '';
  const waiters: (() => void)[] = [];
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  child.stdout!.on('data', (c: Buffer) => {
    out += c.toString();
    let nl = out.indexOf('\n');
    while (nl >= 0) {
      records.push(JSON.parse(out.slice(0, nl)));
      out = out.slice(nl + 1);
      nl = out.indexOf('\n');
    }
    for (const w of waiters.splice(0)) w();
  });
  const until = async (test: () => boolean, ms: number, what: string) => {
    const deadline = Date.now() + ms;
    while (!test()) {
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`${what} not seen within ${ms} ms: ${JSON.stringify(records)} ${err}`);
      await new Promise<void>((r) => {
        waiters.push(r);
        setTimeout(r, 50);
      });
    }
  };
  await until(() => records.some((r) => 'watching' in r), 15_000, 'the ready line');
  const postedRecords = () => records.filter((r) => typeof r['seq'] === 'number');
  return {
    child,
    records,
    stderr: () => err,
    posted: async (count, ms = 10_000) => {
      await until(() => postedRecords().length >= count, ms, `${count} posted record(s)`);
      return postedRecords();
    },
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null) child.kill(signal);
      const [code] = await exited;
      return code as number | null;
    },
  };
}

export const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Writes `text` at `root/rel`, making its directories. */
export async function put(root: string, rel: string, text: string): Promise<void> {
  await mkdir(dirname(join(root, rel)), { recursive: true });
  await writeFile(join(root, rel), text);
}

/** As an editor saves: the bytes to a temporary file beside it, then renamed over it. */
export async function saveByRename(root: string, rel: string, text: string): Promise<void> {
  const tmp = join(root, `${rel}.swp`);
  await mkdir(dirname(tmp), { recursive: true });
  await writeFile(tmp, text);
  await rename(tmp, join(root, rel));
}

export const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
