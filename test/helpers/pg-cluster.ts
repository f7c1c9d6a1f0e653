import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

/** A throwaway PostgreSQL cluster of one test file: a server on a Unix socket only, one database. */
export interface PgCluster {
  /** postgresql://harness:PASSWORD@/harness_test?host=DIR: password (scram) auth over the socket. */
  url: string;
  /** The socket directory (and the cluster's whole temporary directory). */
  dir: string;
  user: string;
  password: string;
  database: string;
  /** The URL with another password or database, for the refusals' tests. */
  urlWith(change: { password?: string; database?: string }): string;
  /** Stops the server (fast mode) and removes the directory; later calls do nothing. */
  stop(): Promise<void>;
  /** Stops the server only (fast mode: open connections are cut), keeping its data. */
  stopServer(): Promise<void>;
  /** Starts the server stopped by `stopServer` again, on the same socket and data. */
  startServer(): Promise<void>;
}

const USER = 'harness';
const DATABASE = 'harness_test';

/**
 * The directory of initdb, pg_ctl and postgres: the newest /usr/lib/postgresql/<major>/bin
 * (Debian's layout), else the PATH's. Null when there is none.
 */
export function pgBinDir(): string | null {
  const debian = '/usr/lib/postgresql';
  if (existsSync(debian)) {
    const majors = readdirSync(debian)
      .filter((v) => /^\d+$/.test(v) && existsSync(join(debian, v, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (majors[0] !== undefined) return join(debian, majors[0], 'bin');
  }
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    if (dir !== '' && existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl'))) return dir;
  }
  return null;
}

/** The uid and gid of the user PostgreSQL runs as when the tests run as root (it refuses root). */
function postgresAccount(): { uid: number; gid: number } | null {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  const fields = line?.split(':');
  return fields === undefined ? null : { uid: Number(fields[2]), gid: Number(fields[3]) };
}

const asRoot = () => process.getuid?.() === 0;

/**
 * Why this machine cannot start a cluster (the message the PostgreSQL tests skip with), or null
 * when it can.
 */
export function pgUnavailableReason(): string | null {
  if (pgBinDir() === null) {
    return 'PostgreSQL tests skipped: no initdb found (in /usr/lib/postgresql/*/bin or on PATH); install PostgreSQL (Debian: apt-get install postgresql) to run them';
  }
  if (asRoot() && postgresAccount() === null) {
    return 'PostgreSQL tests skipped: the tests run as root, which PostgreSQL refuses, and there is no "postgres" user to run it as';
  }
  return null;
}

type Runner = (cmd: string, args: string[]) => [string, string[]];

/** A new temporary directory, owned by the server's user when that is not this process's. */
function ownedTempDir(prefix: string, account: { uid: number; gid: number } | null): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (account !== null) chownSync(dir, account.uid, account.gid);
  return dir;
}

/**
 * The data directory initdb made for this process (scram-sha-256 password auth for USER, with a
 * password generated for the process), which each cluster starts from a copy of: initdb is most
 * of a cluster's start, and a copy of its output is the same fresh cluster. Removed on exit.
 */
let template: Promise<{ data: string; password: string }> | null = null;
function initdbOnce(as: Runner, account: { uid: number; gid: number } | null) {
  template ??= (async () => {
    const dir = ownedTempDir('harness-pg-template-', account);
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
    const password = randomBytes(18).toString('base64url');
    const pwfile = join(dir, 'pwfile');
    writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
    if (account !== null) chownSync(pwfile, account.uid, account.gid);
    const data = join(dir, 'data');
    // --no-sync: initdb's own flush of the new files, which a throwaway cluster does not need.
    const args = ['-D', data, '-U', USER, `--pwfile=${pwfile}`, '--auth=scram-sha-256', '-E', 'UTF8'];
    await run(...as('initdb', [...args, '--no-sync', '--no-instructions']), {
      cwd: dir,
      env: { ...process.env, LC_ALL: 'C' },
    });
    rmSync(pwfile);
    return { data, password };
  })();
  return template;
}

/**
 * Starts a cluster for one test file: a fresh initdb'd data directory (initdbOnce) in a new
 * temporary directory, postgres listening only on a Unix socket in that directory
 * (listen_addresses '', fsync on), and the database `harness_test`. As root, initdb and the
 * server run as the `postgres` user (runuser), which owns the directory. Null when PostgreSQL is
 * not installed (pgUnavailableReason says why). The cluster is stopped on process exit if the
 * test did not stop it.
 */
export async function startPgCluster(): Promise<PgCluster | null> {
  const bin = pgBinDir();
  if (bin === null || pgUnavailableReason() !== null) return null;
  const account = asRoot() ? postgresAccount() : null;
  const as: Runner = (cmd, args) =>
    account === null
      ? [join(bin, cmd), args]
      : ['runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args]];
  const { data: initial, password } = await initdbOnce(as, account);
  const dir = ownedTempDir('harness-pg-', account);
  const data = join(dir, 'data');
  let running = false;
  const stopNow = () => {
    if (running) {
      running = false;
      try {
        execFileSync(...as('pg_ctl', ['stop', '-D', data, '-m', 'fast', '-w']), {
          cwd: dir,
          stdio: 'ignore',
        });
      } catch {
        // Already gone: the directory is removed all the same.
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.on('exit', stopNow);
  try {
    const options = { cwd: dir, env: { ...process.env, LC_ALL: 'C' } };
    // -a keeps the owner (postgres) and the 0700 mode the server insists on.
    await run('cp', ['-a', initial, data]);
    const serverOptions = `-c listen_addresses='' -c unix_socket_directories='${dir}' -c fsync=on -c synchronous_commit=on`;
    const startServer = async () => {
      running = true;
      await run(
        ...as('pg_ctl', ['start', '-D', data, '-w', '-l', join(dir, 'server.log'), '-o', serverOptions]),
        options,
      );
    };
    const stopServer = async () => {
      if (!running) return;
      running = false;
      await run(...as('pg_ctl', ['stop', '-D', data, '-m', 'fast', '-w']), options);
    };
    await startServer();
    const urlWith = (change: { password?: string; database?: string }) =>
      `postgresql://${USER}:${encodeURIComponent(change.password ?? password)}@/${change.database ?? DATABASE}?host=${encodeURIComponent(dir)}`;
    const admin = new pg.Client({ connectionString: urlWith({ database: 'postgres' }) });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${DATABASE}`);
    } finally {
      await admin.end();
    }
    return {
      url: urlWith({}),
      dir,
      user: USER,
      password,
      database: DATABASE,
      urlWith,
      stop: async () => {
        process.off('exit', stopNow);
        await stopServer();
        stopNow();
      },
      stopServer,
      startServer,
    };
  } catch (err) {
    process.off('exit', stopNow);
    stopNow();
    throw err;
  }
}
