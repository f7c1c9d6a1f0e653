import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import t, { type Test } from 'tap';
import { StartupError } from '../../src/storage/lease.js';
import { type Database, type OpenDatabaseOptions, openDatabase } from '../../src/storage/pg/database.js';
import { loadMigrations, MIGRATIONS_DIR } from '../../src/storage/pg/migrations.js';
import type { PgCluster } from '../helpers/pg-cluster.js';
import { clusterOrSkip } from '../helpers/pg-store.js';

/**
 * Issue 32 items 1, 2 and 7: startup's check of the PostgreSQL database (reachable, the password,
 * the database, synchronous_commit) and its migrations under the advisory lock, against a
 * throwaway cluster of this file's own (test/helpers/pg-cluster.ts).
 */
// Loud on purpose: a machine without PostgreSQL runs none of these, and says so in npm test.
const cluster = await clusterOrSkip('PostgreSQL database startup');
if (cluster !== null) await databaseTests(cluster);

async function databaseTests(cluster: PgCluster): Promise<void> {
  const migrations = await loadMigrations();
  const logged: string[] = [];
  const log = (msg: string) => logged.push(msg);
  let databases = 0;

  /** Runs SQL in a database of the cluster as its superuser. */
  async function sql<R extends pg.QueryResultRow>(database: string, text: string): Promise<R[]> {
    const client = new pg.Client({ connectionString: cluster.urlWith({ database }) });
    await client.connect();
    try {
      return (await client.query<R>(text)).rows;
    } finally {
      await client.end();
    }
  }

  /** A new empty database of the cluster, and the URL that opens it. */
  async function fresh(): Promise<{ name: string; url: string }> {
    const name = `db_${++databases}`;
    await sql('postgres', `CREATE DATABASE ${name}`);
    return { name, url: cluster.urlWith({ database: name }) };
  }

  const open = (url: string, more: Partial<OpenDatabaseOptions> = {}) =>
    openDatabase({ url, poolSize: 2, log, connectTimeoutMs: 5000, ...more });

  /** Everything startup could change: the tables, their columns and the recorded migrations. */
  async function state(database: string): Promise<unknown> {
    const columns = await sql(
      database,
      `SELECT table_name, column_name, data_type FROM information_schema.columns
       WHERE table_schema = 'public' ORDER BY table_name, ordinal_position`,
    );
    const tables = new Set(columns.map((c) => c['table_name']));
    const recorded = tables.has('harness_schema_migrations')
      ? await sql(
          database,
          'SELECT version, name, applied_at FROM harness_schema_migrations ORDER BY version',
        )
      : [];
    const runs = tables.has('harness_runs')
      ? await sql(database, 'SELECT * FROM harness_runs ORDER BY ordinal')
      : [];
    return { columns, recorded, runs };
  }

  async function refused(t: Test, opening: Promise<Database>, says: RegExp): Promise<string> {
    const err = await opening.then(
      async (db) => {
        await db.close();
        return new Error('openDatabase succeeded');
      },
      (e: unknown) => e as Error,
    );
    t.ok(err instanceof StartupError, `a StartupError: ${err.message}`);
    t.match(err.message, says);
    t.notOk(err.message.includes(cluster.password), 'the password is not in the message');
    t.notOk(err.message.includes('\n'), 'one line');
    return err.message;
  }

  async function recorded(database: string): Promise<{ version: number; name: string }[]> {
    return sql(database, 'SELECT version, name FROM harness_schema_migrations ORDER BY version');
  }

  /** The database is at this build's newest schema, each migration recorded under its name. */
  async function atNewest(t: Test, db: Database, database: string): Promise<void> {
    t.equal(db.schemaVersion, 2);
    t.same(await recorded(database), [
      { version: 1, name: 'runs' },
      { version: 2, name: 'quarantines_leases' },
    ]);
  }

  t.test('the throwaway cluster listens on its socket only, with fsync on', async (t) => {
    const settings = await sql(
      cluster.database,
      "SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'listen_addresses', 'unix_socket_directories', 'password_encryption') ORDER BY name",
    );
    t.same(settings, [
      { name: 'fsync', setting: 'on' },
      { name: 'listen_addresses', setting: '' },
      { name: 'password_encryption', setting: 'scram-sha-256' },
      { name: 'unix_socket_directories', setting: cluster.dir },
    ]);
  });

  t.test('the build ships every migration, numbered without a gap', async (t) => {
    const source = fileURLToPath(new URL('../../../src/storage/pg/migrations/', import.meta.url));
    t.same(
      (await readdir(MIGRATIONS_DIR)).sort(),
      (await readdir(source)).filter((n) => n.endsWith('.sql')).sort(),
      'dist holds the .sql files of src',
    );
    t.same(
      migrations.map((m) => [m.version, m.name]),
      [
        [1, 'runs'],
        [2, 'quarantines_leases'],
      ],
    );
    const gap = await mkdtemp(join(tmpdir(), 'harness-migrations-'));
    t.teardown(() => rm(gap, { recursive: true, force: true }));
    await writeFile(join(gap, '001_a.sql'), 'SELECT 1');
    await writeFile(join(gap, '003_c.sql'), 'SELECT 1');
    await t.rejects(loadMigrations(gap), StartupError, 'a gap in the numbers is refused');
  });

  t.test('an empty database is migrated to the newest schema', async (t) => {
    const { name, url } = await fresh();
    const db = await open(url);
    await atNewest(t, db, name);
    await db.close();
    await db.close();
    t.equal(db.pool.totalCount, 0, 'closed, twice without an error');
    const tables = await sql<{ table_name: string }>(
      name,
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name",
    );
    t.same(
      tables.map((r) => r.table_name),
      [
        'harness_quarantines',
        'harness_records',
        'harness_run_leases',
        'harness_runs',
        'harness_schema_migrations',
      ],
    );
    t.match(db.target, new RegExp(`^${cluster.dir}:5432 database "${name}"$`), 'named without the password');
  });

  t.test('an old schema (001 only) is migrated to 002, its rows kept', async (t) => {
    const { name, url } = await fresh();
    const old = await open(url, { migrations: migrations.slice(0, 1) });
    t.equal(old.schemaVersion, 1);
    await old.close();
    t.same(await recorded(name), [{ version: 1, name: 'runs' }]);
    await sql(name, "INSERT INTO harness_runs (run_id, created_at, config) VALUES ('r1', 'then', '{}')");
    const db = await open(url);
    t.teardown(() => db.close());
    await atNewest(t, db, name);
    t.same(await sql(name, 'SELECT run_id FROM harness_run_leases'), [], '002 made its tables');
    t.same(await sql(name, 'SELECT run_id FROM harness_runs'), [{ run_id: 'r1' }], 'the run is still there');
  });

  t.test('a schema newer than this build is refused, nothing changed', async (t) => {
    const { name, url } = await fresh();
    await (await open(url)).close();
    await sql(name, "INSERT INTO harness_schema_migrations (version, name) VALUES (3, 'from_the_future')");
    const before = await state(name);
    await refused(t, open(url), /schema version 3 is newer than this bridge supports \(2\)/);
    t.same(await state(name), before, 'the database is as it was');
    // A build that knows only 001 refuses a database at 002 the same way.
    const { name: second, url: secondUrl } = await fresh();
    await (await open(secondUrl)).close();
    const atTwo = await state(second);
    await refused(
      t,
      open(secondUrl, { migrations: migrations.slice(0, 1) }),
      /schema version 2 is newer than this bridge supports \(1\)/,
    );
    t.same(await state(second), atTwo, 'the database is as it was');
  });

  t.test('a recorded migration whose name is not the file name is refused, nothing changed', async (t) => {
    const { name, url } = await fresh();
    await (await open(url, { migrations: migrations.slice(0, 1) })).close();
    await sql(name, "UPDATE harness_schema_migrations SET name = 'runs_v2' WHERE version = 1");
    const before = await state(name);
    await refused(t, open(url), /schema version 1 is recorded as "runs_v2", not this bridge's "runs"/);
    t.same(await state(name), before, 'not migrated to 002 either');
  });

  t.test('a migration that fails leaves nothing behind, not even the ones before it', async (t) => {
    const { name, url } = await fresh();
    const broken = [migrations[0]!, { version: 2, name: 'broken', sql: 'CREATE TABLE harness_runs (x int)' }];
    await refused(
      t,
      open(url, { migrations: broken }),
      /cannot be migrated: relation "harness_runs" already exists/,
    );
    t.same(await state(name), { columns: [], recorded: [], runs: [] }, 'no table, no record');
  });

  t.test('bridges starting together migrate once, and all start', async (t) => {
    const { name, url } = await fresh();
    const dbs = await Promise.all([open(url), open(url), open(url), open(url)]);
    t.teardown(() => Promise.all(dbs.map((db) => db.close())));
    t.same(
      dbs.map((db) => db.schemaVersion),
      [2, 2, 2, 2],
    );
    t.same(
      await sql(
        name,
        'SELECT version, count(*)::int AS n FROM harness_schema_migrations GROUP BY version ORDER BY 1',
      ),
      [
        { version: 1, n: 1 },
        { version: 2, n: 1 },
      ],
      'each version recorded once',
    );
  });

  t.test(
    'every pooled connection commits synchronously, even where the database default is off',
    async (t) => {
      const { name, url } = await fresh();
      await sql(name, `ALTER DATABASE ${name} SET synchronous_commit = off`);
      t.same(
        await sql(name, 'SHOW synchronous_commit'),
        [{ synchronous_commit: 'off' }],
        'off by default here',
      );
      const db = await open(url, { poolSize: 3 });
      t.teardown(() => db.close());
      const clients = await Promise.all([db.pool.connect(), db.pool.connect(), db.pool.connect()]);
      const settings = await Promise.all(clients.map((c) => c.query('SHOW synchronous_commit')));
      for (const c of clients) c.release();
      t.same(
        settings.map((s) => s.rows[0]),
        Array(3).fill({ synchronous_commit: 'on' }),
      );
      t.equal(db.pool.totalCount, 3, 'three connections of the pool');
      // The URL's own options would take the place of the bridge's: startup sees it and refuses.
      const before = await state(name);
      await refused(
        t,
        open(`${url}&options=${encodeURIComponent('-c synchronous_commit=off')}`),
        /has synchronous_commit off, not on/,
      );
      t.same(await state(name), before, 'nothing changed');
    },
  );

  t.test('the wrong password is refused, naming the server and never a password', async (t) => {
    const wrong = 'not-the-password-4711';
    const before = await state(cluster.database);
    const message = await refused(
      t,
      open(cluster.urlWith({ password: wrong })),
      new RegExp(
        `^HARNESS_DATABASE_URL: cannot connect to PostgreSQL at ${cluster.dir}:5432 database "${cluster.database}": password authentication failed \\(28P01\\)$`,
      ),
    );
    t.notOk(message.includes(wrong), 'not the wrong one either');
    t.same(await state(cluster.database), before, 'nothing changed');
  });

  t.test('an unknown database is refused', async (t) => {
    await refused(
      t,
      open(cluster.urlWith({ database: 'no_such_db' })),
      /database "no_such_db": the database does not exist \(3D000\)$/,
    );
  });

  t.test('no server is refused: an empty socket directory, a closed port', async (t) => {
    const empty = await mkdtemp(join(tmpdir(), 'harness-nopg-'));
    t.teardown(() => rm(empty, { recursive: true, force: true }));
    const socketUrl = `postgresql://harness:${cluster.password}@/harness_test?host=${encodeURIComponent(empty)}`;
    await refused(
      t,
      open(socketUrl),
      new RegExp(`at ${empty}:5432 database "harness_test": no server socket there`),
    );
    await refused(
      t,
      open(`postgres://harness:${cluster.password}@127.0.0.1:1/harness_test`),
      /at 127\.0\.0\.1:1 database "harness_test": connection refused \(is the server running\?\) \(ECONNREFUSED\)$/,
    );
  });

  t.test('an idle connection that fails is logged, not thrown', async (t) => {
    const { name, url } = await fresh();
    const db = await open(url);
    t.teardown(() => db.close());
    const client = await db.pool.connect();
    const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    client.release();
    t.equal(db.pool.idleCount, 1, 'the connection is idle in the pool');
    const before = logged.length;
    const dropped = new Promise((resolve) => db.pool.once('error', resolve));
    await sql(name, `SELECT pg_terminate_backend(${pid})`);
    await dropped;
    const lines = logged.slice(before);
    t.equal(lines.length, 1, `logged: ${lines.join(' | ')}`);
    t.match(lines[0], /an idle connection failed/);
    t.notOk(lines[0]?.includes(cluster.password), 'without the password');
    t.same((await db.pool.query('SELECT 1 AS one')).rows, [{ one: 1 }], 'the pool connects again');
  });

  t.test('a stopped cluster is refused, and stopping removed its directory', async (t) => {
    await cluster.stop();
    t.notOk(existsSync(cluster.dir), 'the temporary directory is gone');
    await refused(t, open(cluster.url), /cannot connect to PostgreSQL at .*: no server socket there/);
  });
}
