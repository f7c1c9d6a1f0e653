import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ClientBase } from 'pg';
import { StartupError } from '../lease.js';

/** One schema step: `migrations/NNN_name.sql`, applied once, in version order. */
export interface Migration {
  version: number;
  /** The file's name between the number and `.sql` (`runs` for 001_runs.sql), as recorded. */
  name: string;
  sql: string;
}

/**
 * Where the migrations are: the .sql files beside this module (the build copies them from src to
 * dist: scripts/copy-migrations.mjs).
 */
export const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

/**
 * The key of the transaction-scoped advisory lock every bridge takes before it reads or changes
 * the schema, so two bridges starting together migrate once (the first 8 bytes of
 * SHA-256("harness-bridge schema migrations") as a signed 64-bit integer).
 */
export const MIGRATION_LOCK_KEY = '4713487807155070222';

const FILE = /^(\d{3})_([a-z0-9_]+)\.sql$/;

/**
 * The migrations this build knows, in version order: every file of MIGRATIONS_DIR, which must be
 * numbered 001, 002, ... without a gap (a build that lost one would otherwise call an older
 * schema current).
 */
export async function loadMigrations(dir: string = MIGRATIONS_DIR): Promise<readonly Migration[]> {
  const names = (await readdir(dir)).filter((n) => n.endsWith('.sql')).sort();
  const migrations: Migration[] = [];
  for (const [i, file] of names.entries()) {
    const m = FILE.exec(file);
    if (m === null || Number(m[1]) !== i + 1) {
      throw new StartupError(
        `${join(dir, file)} is not migration ${String(i + 1).padStart(3, '0')}_<name>.sql`,
      );
    }
    migrations.push({ version: i + 1, name: m[2]!, sql: await readFile(join(dir, file), 'utf8') });
  }
  return migrations;
}

const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS harness_schema_migrations (
  version int PRIMARY KEY,
  name text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
)`;

/**
 * Brings the database to `migrations` (the first of them with the lowest version) in one
 * transaction holding the migration lock: a database recorded at a version this build does not
 * know, or with a recorded name that differs from the file's, is refused and left exactly as it
 * was (the transaction is rolled back, the record table too if this made it). Returns the
 * database's schema version afterwards and the versions this call applied.
 */
export async function migrate(
  client: ClientBase,
  migrations: readonly Migration[],
): Promise<{ version: number; applied: number[] }> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1::bigint)', [MIGRATION_LOCK_KEY]);
    await client.query(CREATE_TABLE);
    const recorded = await client.query<{ version: number; name: string }>(
      'SELECT version, name FROM harness_schema_migrations ORDER BY version',
    );
    checkRecorded(recorded.rows, migrations);
    const applied: number[] = [];
    for (const m of migrations.slice(recorded.rows.length)) {
      await client.query(m.sql);
      await client.query('INSERT INTO harness_schema_migrations (version, name) VALUES ($1, $2)', [
        m.version,
        m.name,
      ]);
      applied.push(m.version);
    }
    await client.query('COMMIT');
    return { version: Math.max(recorded.rows.length, migrations.length), applied };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
}

/** The recorded migrations must be this build's first ones, version for version and name for name. */
function checkRecorded(
  rows: readonly { version: number; name: string }[],
  migrations: readonly Migration[],
): void {
  const newest = rows.at(-1)?.version ?? 0;
  const supported = migrations.length;
  if (newest > supported) {
    throw new StartupError(
      `the database's schema version ${newest} is newer than this bridge supports (${supported}); upgrade the bridge (the database was left unchanged)`,
    );
  }
  for (const [i, row] of rows.entries()) {
    const known = migrations[i]!;
    if (row.version !== known.version || row.name !== known.name) {
      throw new StartupError(
        `the database's schema version ${row.version} is recorded as ${JSON.stringify(row.name)}, not this bridge's ${JSON.stringify(known.name)} (${String(known.version).padStart(3, '0')}_${known.name}.sql); it was changed by another program (the database was left unchanged)`,
      );
    }
  }
}
