import { open, readFile, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { atomicWrite } from './atomic.js';
import { LEASE_FILE, MUTEX_FILE } from './paths.js';

/** A startup refusal: printed as one line, exit code 2. */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}

interface Holder {
  pid: number;
  host: string;
  startedAt: string;
}

function parseHolder(text: string): Holder | null {
  try {
    const v = JSON.parse(text) as Partial<Holder>;
    if (Number.isInteger(v.pid) && typeof v.host === 'string' && typeof v.startedAt === 'string')
      return v as Holder;
  } catch {
    // malformed
  }
  return null;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function me(): Holder {
  return { pid: process.pid, host: hostname(), startedAt: new Date().toISOString() };
}

/**
 * The recovery mutex serializes bridge startups on one data directory. It is never stolen: a
 * leftover one means a startup crashed mid-recovery (or is running), and only an operator who has
 * confirmed that no startup is active may remove it.
 */
export async function acquireMutex(dataDir: string): Promise<() => Promise<void>> {
  const path = join(dataDir, MUTEX_FILE);
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const holder = parseHolder(await readFile(path, 'utf8').catch(() => ''));
    const what = holder
      ? `a stale or active recovery mutex (pid ${holder.pid} since ${holder.startedAt})`
      : 'a malformed recovery mutex';
    throw new StartupError(
      `HARNESS_DATA_DIR holds ${what} at ${path}; it is never removed automatically: confirm no bridge startup is active, then delete that file`,
    );
  }
  await handle.writeFile(JSON.stringify(me()));
  await handle.sync();
  await handle.close();
  return () => unlink(path);
}

/** One bridge per data directory: a lease whose holder is alive blocks a second bridge. */
export async function acquireLease(dataDir: string): Promise<() => Promise<void>> {
  const path = join(dataDir, LEASE_FILE);
  const text = await readFile(path, 'utf8').catch(() => null);
  if (text !== null) {
    const holder = parseHolder(text);
    if (holder && holder.pid !== process.pid && holder.host === hostname() && alive(holder.pid)) {
      throw new StartupError(
        `HARNESS_DATA_DIR ${dataDir} is already leased by another bridge process (pid ${holder.pid})`,
      );
    }
  }
  const mine = me();
  await atomicWrite(path, JSON.stringify(mine));
  return async () => {
    const current = parseHolder(await readFile(path, 'utf8').catch(() => ''));
    if (current?.pid === mine.pid && current.startedAt === mine.startedAt) await unlink(path).catch(() => {});
  };
}
