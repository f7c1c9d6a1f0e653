import { fstatSync } from 'node:fs';
import { type FileHandle, open, realpath, stat, unlink, utimes } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { atomicWrite } from './atomic.js';
import { openNoFollow, READ, readTextNoFollow } from './no-follow.js';
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
    const what = mutexDescription(await readTextNoFollow(path).catch(() => ''));
    throw new StartupError(
      `HARNESS_DATA_DIR holds ${what} at ${path}; it is never removed automatically: confirm no bridge startup is active, then delete that file`,
    );
  }
  await handle.writeFile(JSON.stringify(me()));
  await handle.sync();
  await handle.close();
  return () => unlink(path);
}

function mutexDescription(text: string): string {
  const holder = parseHolder(text);
  return holder
    ? `a stale or active recovery mutex (pid ${holder.pid} since ${holder.startedAt})`
    : 'a malformed recovery mutex';
}

/**
 * What a recovery mutex in `dataDir` says, as bridge startup would refuse on it, or null when there
 * is none: for `harness verify`, which reads it (never through a link) and never removes it.
 */
export async function mutexLeftBehind(dataDir: string): Promise<string | null> {
  const path = join(dataDir, MUTEX_FILE);
  try {
    return mutexDescription(await readTextNoFollow(path));
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? null : mutexDescription('');
  }
}

/** A held lease's file is touched this often, so a bridge on another host can tell it is live. */
export const LEASE_RENEW_MS = 10_000;
/** A lease from another host not touched for this long is stale (its holder cannot be asked). */
export const LEASE_STALE_MS = 3 * LEASE_RENEW_MS;

/**
 * The lease's holder if it is a live bridge: on this host, a live process other than this one
 * (ageMs null); from another host, a lease renewed within LEASE_STALE_MS, judged by the file's
 * modification time, which the holder touches every LEASE_RENEW_MS.
 */
async function liveHolder(
  path: string,
  text: string | null,
): Promise<{ holder: Holder; ageMs: number | null } | null> {
  const holder = text === null ? null : parseHolder(text);
  if (!holder) return null;
  if (holder.host === hostname())
    return holder.pid !== process.pid && alive(holder.pid) ? { holder, ageMs: null } : null;
  const ageMs = Date.now() - ((await stat(path).catch(() => null))?.mtimeMs ?? 0);
  return ageMs < LEASE_STALE_MS ? { holder, ageMs } : null;
}

const describe = (h: Holder) => `pid ${h.pid} on host ${JSON.stringify(h.host)}`;

/**
 * For `harness verify`, which never takes the lease: the bridge holding the data directory's
 * lease right now (by acquireLease's rule), or null. A lease file that is a link is not read.
 */
export async function leaseHolderNow(dataDir: string): Promise<string | null> {
  const path = join(dataDir, LEASE_FILE);
  const live = await liveHolder(path, await readTextNoFollow(path).catch(() => null));
  return live === null ? null : describe(live.holder);
}

/** This bridge's lease file is no longer the data directory's: it was replaced or removed. */
export class LeaseLostError extends Error {
  override readonly name = 'LeaseLostError';
}

/** A lease this bridge holds. */
export interface Lease {
  /** Gives the lease up; its file is removed if it still names this bridge. */
  release(): Promise<void>;
  /**
   * Throws LeaseLostError once the file this bridge wrote is no longer the lease: another bridge
   * replaced it (a takeover is an atomic replace) or it was removed. One fstat of the file kept
   * open since it was written, cheap enough to run before every commit-log write, so a bridge that
   * was taken over stops writing at once, not at its next renewal; the loss is then reported
   * through `onLost` as a renewal would report it.
   */
  fence(): void;
}

/** Data directories (real paths) whose lease a bridge in this process holds. */
const heldHere = new Set<string>();

/**
 * One bridge per data directory. A lease blocks a second bridge when its holder is alive: on this
 * host, a live process other than this one, or a bridge in this very process (the same PID in the
 * file is otherwise a previous holder whose PID was reused, as after a container restart); from
 * another host (containers sharing a volume), a lease renewed within LEASE_STALE_MS, judged by the
 * file's modification time, which the holder touches every LEASE_RENEW_MS.
 */
export async function acquireLease(
  dataDir: string,
  opts: { renewMs?: number; onLost?: (holder: string) => void } = {},
): Promise<Lease> {
  const path = join(dataDir, LEASE_FILE);
  const held = await realpath(dataDir);
  if (heldHere.has(held)) {
    throw new StartupError(
      `HARNESS_DATA_DIR ${dataDir} is already leased by another bridge process (a bridge in this process, pid ${process.pid})`,
    );
  }
  const live = await liveHolder(path, await readTextNoFollow(path).catch(() => null));
  if (live?.ageMs === null) {
    throw new StartupError(
      `HARNESS_DATA_DIR ${dataDir} is already leased by another bridge process (pid ${live.holder.pid})`,
    );
  }
  if (live) {
    throw new StartupError(
      `HARNESS_DATA_DIR ${dataDir} is already leased by another bridge process (${describe(live.holder)}, renewed ${Math.max(0, Math.round(live.ageMs / 1000))} s ago); if that bridge is gone, start again after ${LEASE_STALE_MS / 1000} s without renewal`,
    );
  }
  const mine = me();
  await atomicWrite(path, JSON.stringify(mine));
  const isMine = (h: Holder | null | undefined) =>
    h?.pid === mine.pid && h.host === mine.host && h.startedAt === mine.startedAt;
  const own: FileHandle = await openNoFollow(path, READ);
  if (!isMine(parseHolder(await own.readFile('utf8')))) {
    await own.close();
    throw new StartupError(
      `HARNESS_DATA_DIR ${dataDir}: another bridge took the lease over while it was taken`,
    );
  }
  heldHere.add(held);
  /** The holder the file names; null when it is gone or names none; undefined when unreadable now. */
  const holderNow = async (): Promise<Holder | null | undefined> => {
    try {
      return parseHolder(await readTextNoFollow(path));
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ENOENT' ? null : undefined;
    }
  };
  // A lease still ours is renewed. One taken over meanwhile (its holder looked stale from another
  // host, as after a suspended VM) or removed is left alone: renewal stops and `onLost` is told
  // once, naming the new holder. A read that fails for another reason waits for the next tick.
  let released = false;
  let lost = false;
  let fenceClosed = false;
  /** `replaced`: the fence found the file this bridge wrote gone, whatever the path holds now. */
  const check = (replaced = false) =>
    void holderNow()
      .then(async (h) => {
        if ((h === undefined && !replaced) || released || lost) return;
        if (isMine(h) && !replaced) {
          await utimes(path, new Date(), new Date());
          return;
        }
        lost = true;
        fenceClosed = true;
        clearInterval(renew);
        opts.onLost?.(h && !isMine(h) ? describe(h) : 'nobody (the lease file is gone or malformed)');
      })
      .catch(() => {});
  const renew = setInterval(check, opts.renewMs ?? LEASE_RENEW_MS);
  renew.unref();
  // A failed fstat counts as lost too: on a network file system, a file another host replaced
  // leaves this host's descriptor stale (ESTALE).
  const linked = () => {
    try {
      return fstatSync(own.fd).nlink > 0;
    } catch {
      return false;
    }
  };
  return {
    fence() {
      if (!released && !fenceClosed && linked()) return;
      if (!fenceClosed) {
        fenceClosed = true;
        check(true);
      }
      throw new LeaseLostError('the bridge lease was taken over or removed: this bridge writes nothing more');
    },
    async release() {
      released = true;
      clearInterval(renew);
      heldHere.delete(held);
      await own.close();
      if (isMine(await holderNow())) await unlink(path).catch(() => {});
    },
  };
}
