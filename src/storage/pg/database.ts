import pg from 'pg';
import { StartupError } from '../lease.js';
import { loadMigrations, type Migration, migrate } from './migrations.js';
import { DATABASE_URL_NAME, databaseUrlSecrets } from './url.js';

export interface OpenDatabaseOptions {
  /** HARNESS_DATABASE_URL, checked by parseDatabaseUrl; its password is never shown. */
  url: string;
  /** HARNESS_DB_POOL: the most connections the pool holds. */
  poolSize: number;
  /** Where the pool reports what it cannot throw: an idle connection that failed. */
  log: (msg: string) => void;
  /** The migrations to bring the database to: loadMigrations() unless a test gives fewer. */
  migrations?: readonly Migration[];
  /** How long connecting may take before startup gives up (10 s). */
  connectTimeoutMs?: number;
}

/** The PostgreSQL database behind the run store, checked and migrated. */
export interface Database {
  /** Every connection has synchronous_commit on: a COMMIT returns once the record is on disk. */
  readonly pool: pg.Pool;
  /** The schema version after startup's migrations (the highest recorded). */
  readonly schemaVersion: number;
  /** Which server and database, for messages: `host:port database "name"`, never a password. */
  readonly target: string;
  /** Ends every connection; later calls wait for the first. */
  close(): Promise<void>;
}

const CONNECT_TIMEOUT_MS = 10_000;

/** Why a connection failed, in words, by the Node error code or the server's SQLSTATE. */
const REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused (is the server running?)',
  ENOENT: 'no server socket there (is the server running?)',
  ENOTFOUND: 'host not found',
  EHOSTUNREACH: 'host unreachable',
  ETIMEDOUT: 'timed out',
  '28P01': 'password authentication failed',
  '28000': 'the server refused this user or host (pg_hba.conf)',
  '3D000': 'the database does not exist',
  '57P03': 'the server is starting up or shutting down',
};

/**
 * Opens the pool, connects once to check the server (a refusal names host, port, database and the
 * reason in one line, never the password), checks synchronous_commit took effect, applies the
 * migrations under the migration lock, and returns. Any failure closes the pool and is a
 * StartupError.
 */
export async function openDatabase(opts: OpenDatabaseOptions): Promise<Database> {
  const scrub = scrubber(opts.url);
  // Not connected: node-postgres's own reading of the URL (with `?host=` and the PG* defaults),
  // so the messages name what it connects to.
  const params = new pg.Client({ connectionString: opts.url });
  const target = `${params.host}:${params.port} database ${JSON.stringify(params.database ?? '')}`;
  const pool = new pg.Pool({
    connectionString: opts.url,
    max: opts.poolSize,
    connectionTimeoutMillis: opts.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
    // A startup parameter, so it holds on every connection the pool ever opens (checked below:
    // the URL's own `?options=` would take its place).
    options: '-c synchronous_commit=on',
  });
  // An idle connection that fails (the server restarted, the network dropped) is emitted here;
  // unheard, it would end the process. The pool drops that connection and opens another on demand.
  pool.on('error', (err) =>
    opts.log(`PostgreSQL at ${target}: an idle connection failed: ${scrub(err.message)}`),
  );
  let closed: Promise<void> | null = null;
  const close = () => {
    closed ??= pool.end();
    return closed;
  };
  try {
    const migrations = opts.migrations ?? (await loadMigrations());
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (err) {
      throw new StartupError(
        `${DATABASE_URL_NAME}: cannot connect to PostgreSQL at ${target}: ${reason(err, scrub)}`,
      );
    }
    try {
      const sync = await client.query<{ synchronous_commit: string }>('SHOW synchronous_commit');
      const value = sync.rows[0]?.synchronous_commit;
      if (value !== 'on') {
        throw new StartupError(
          `${DATABASE_URL_NAME}: PostgreSQL at ${target} has synchronous_commit ${value ?? 'unknown'}, not on (is it set in the URL's options?); the bridge acknowledges only committed records`,
        );
      }
      const { version } = await migrate(client, migrations);
      return { pool, schemaVersion: version, target, close };
    } catch (err) {
      if (err instanceof StartupError) throw err;
      throw new StartupError(
        `${DATABASE_URL_NAME}: PostgreSQL at ${target} cannot be migrated: ${reason(err, scrub)}`,
      );
    } finally {
      client.release();
    }
  } catch (err) {
    await close();
    throw err instanceof StartupError ? new StartupError(scrub(err.message)) : err;
  }
}

function reason(err: unknown, scrub: (text: string) => string): string {
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  const message = scrub(String(e.message ?? err)).replace(/\s+/g, ' ');
  const known = REASONS[code];
  return known === undefined ? message || code || 'unknown error' : `${known} (${code})`;
}

/** Replaces every form of the URL's password (and the URL itself) in a text with `***`. */
function scrubber(url: string): (text: string) => string {
  const secrets = databaseUrlSecrets(url).sort((a, b) => b.length - a.length);
  return (text) => secrets.reduce((out, s) => out.split(s).join('***'), text);
}
