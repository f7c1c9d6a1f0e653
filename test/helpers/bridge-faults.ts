/**
 * Loaded into a spawned bridge with `--import` (spawnBridge's `node` option), never by the bridge
 * itself: the fault a test injects into a real bridge process, with the bridge's code unchanged.
 * `TEST_FAULT` (read only here) picks it, and SIGUSR2 sets it off:
 *
 * - `storage`: the data directory's disk starts failing. From the commit log's next write on,
 *   every write and fdatasync of a file under HARNESS_DATA_DIR fails with EIO, through the
 *   `node:fs` functions the commit path calls (src/storage/fd-io.ts: `write`, `writeSync`, `fdatasync`). The
 *   first failure is thus a log write carrying a batch of records, which no client may be told
 *   are stored.
 * - `listener`: the listening socket reports an error, as Node's net server does when an accept
 *   fails (`accept EMFILE`).
 */
import fs, { readlinkSync, realpathSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';

type Callback = (err: NodeJS.ErrnoException | null, ...rest: unknown[]) => void;
type Fn = (...args: unknown[]) => unknown;

const eio = (syscall: string): NodeJS.ErrnoException =>
  Object.assign(new Error(`EIO: i/o error, ${syscall}`), { errno: -5, code: 'EIO', syscall });

function failStorage(): void {
  let armed = false;
  let failing = false;
  let dataDir = '';
  process.on('SIGUSR2', () => {
    dataDir = realpathSync(process.env['HARNESS_DATA_DIR']!);
    armed = true;
  });
  /** The path of a descriptor under the data directory, or null. */
  const inData = (fd: unknown): string | null => {
    if (!armed || typeof fd !== 'number') return null;
    try {
      const path = readlinkSync(`/proc/self/fd/${fd}`);
      return path.startsWith(`${dataDir}/`) ? path : null;
    } catch {
      return null;
    }
  };
  const fails = (fd: unknown): boolean => {
    const path = inData(fd);
    if (path?.endsWith('/commit.log')) failing = true;
    return failing && path !== null;
  };
  const target = fs as unknown as Record<string, Fn>;
  const callbackForm = (name: string) => {
    const original = target[name]!;
    target[name] = (fd: unknown, ...rest: unknown[]) => {
      if (!fails(fd)) return original(fd, ...rest);
      const cb = rest.at(-1) as Callback;
      process.nextTick(cb, eio(name));
      return undefined;
    };
  };
  callbackForm('write');
  callbackForm('fdatasync');
  const writeSync = target['writeSync']!;
  target['writeSync'] = (fd: unknown, ...rest: unknown[]) => {
    if (fails(fd)) throw eio('write');
    return writeSync(fd, ...rest);
  };
  syncBuiltinESMExports();
}

function failListener(): void {
  const servers: net.Server[] = [];
  const listen = net.Server.prototype.listen;
  net.Server.prototype.listen = function (this: net.Server, ...args: unknown[]) {
    servers.push(this);
    return (listen as Fn).apply(this, args);
  } as typeof listen;
  process.on('SIGUSR2', () => {
    for (const server of servers)
      server.emit('error', Object.assign(new Error('accept EMFILE'), { code: 'EMFILE', syscall: 'accept' }));
  });
}

if (process.env['TEST_FAULT'] === 'storage') failStorage();
else if (process.env['TEST_FAULT'] === 'listener') failListener();
