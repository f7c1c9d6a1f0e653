import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { CLI } from './paths.js';

/** A long-running CLI command as a child, as a user runs it: its stdout JSON records, stderr, its end. */
export interface JsonLinesChild {
  child: ChildProcess;
  records: Record<string, any>[];
  stderr: () => string;
  /** Resolves once `test()` holds; rejects after `ms`, or when the child exited first. */
  until: (test: () => boolean, ms: number, what: string) => Promise<void>;
  /** Sends `signal` and resolves with the exit code once it exited. */
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
}

/** Starts `harness ...args` with exactly `env` and waits for the record `ready` picks (15 s at most). */
export async function startJsonLinesChild(
  t: { teardown(fn: () => unknown): void },
  args: string[],
  env: Record<string, string>,
  ready: (record: Record<string, any>) => boolean,
): Promise<JsonLinesChild> {
  const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
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
  await until(() => records.some(ready), 15_000, 'the ready line');
  return {
    child,
    records,
    stderr: () => err,
    until,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null) child.kill(signal);
      const [code] = await exited;
      return code as number | null;
    },
  };
}
