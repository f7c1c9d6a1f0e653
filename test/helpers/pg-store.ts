import { randomBytes } from 'node:crypto';
import pg from 'pg';
import t from 'tap';
import { type PgCluster, pgUnavailableReason, startPgCluster } from './pg-cluster.js';

/**
 * The store the bridge suites run against: the file store, or PostgreSQL when a test environment
 * is made with a database (makeTestEnv's `database`, or HARNESS_TEST_DATABASE_URL, which
 * test/server-pg.test.ts sets to run test/server/ again). Each environment gets a fresh schema of
 * that database, so tests never see each other's runs.
 */
export const suiteDatabase = (): string | undefined => process.env['HARNESS_TEST_DATABASE_URL'] || undefined;

/**
 * Options for a test about the file store's own layout (directories, snapshots, leftovers of
 * interrupted writes), skipped when the suite runs against PostgreSQL, saying so.
 */
export const fileStoreOnly = (what: string): { skip: string | false } => ({
  skip: suiteDatabase() === undefined ? false : `file store only: ${what}`,
});

const pools = new Map<string, pg.Pool>();

/**
 * One pooled connection per URL, which lets the process exit while idle and ignores its idle
 * connection ending (the test's cluster stopping under it at the end of the file).
 */
function poolFor(url: string): pg.Pool {
  let pool = pools.get(url);
  if (!pool) {
    pool = new pg.Pool({ connectionString: url, max: 1, allowExitOnIdle: true });
    pool.on('error', () => {});
    pools.set(url, pool);
  }
  return pool;
}

/** A new empty schema of the database, and the URL that makes it the bridge's (its search_path). */
export async function freshSchema(database: string): Promise<string> {
  const schema = `t_${randomBytes(8).toString('hex')}`;
  await poolFor(database).query(`CREATE SCHEMA ${schema}`);
  // Appended as text: `new URL` refuses the empty host of a socket URL (`postgresql://u:p@/db?host=/dir`).
  return `${database}${database.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
}

/** The run's records as the file store's events.jsonl would hold them (empty: no records). */
export async function journalRows(url: string, runId: string): Promise<Buffer> {
  const { rows } = await poolFor(url)
    .query<{ line: string }>('SELECT line FROM harness_records WHERE run_id = $1 ORDER BY seq', [runId])
    .catch(() => ({ rows: [] as { line: string }[] }));
  return Buffer.from(rows.map((r) => `${r.line}\n`).join(''));
}

/** The run's sealed config as its row holds it; a run without a row reads as a missing file. */
export async function configRow(url: string, runId: string): Promise<Buffer> {
  const { rows } = await poolFor(url).query<{ config: string }>(
    'SELECT config FROM harness_runs WHERE run_id = $1',
    [runId],
  );
  if (rows[0] === undefined) throw Object.assign(new Error(`no run ${runId}`), { code: 'ENOENT' });
  return Buffer.from(rows[0].config);
}

/** Rewrites the run's config text through SQL, as someone with the database's password could. */
export async function rewriteConfigRow(
  url: string,
  runId: string,
  change: (config: Buffer) => Buffer,
): Promise<void> {
  const text = change(await configRow(url, runId)).toString();
  await poolFor(url).query('UPDATE harness_runs SET config = $2 WHERE run_id = $1', [runId, text]);
}

/**
 * The cluster of a test file that needs PostgreSQL, stopped when the file ends; null on a machine
 * that cannot start one, after saying so loudly (on stderr, which npm test shows, and as a tap
 * SKIP named `what`).
 */
export async function clusterOrSkip(what: string): Promise<PgCluster | null> {
  const unavailable = pgUnavailableReason();
  const cluster = unavailable === null ? await startPgCluster() : null;
  if (cluster === null) {
    const why = unavailable ?? 'PostgreSQL tests skipped: the cluster did not start';
    process.stderr.write(`\n*** ${why} ***\n\n`);
    t.test(what, { skip: why }, () => {});
    return null;
  }
  t.teardown(() => cluster.stop());
  return cluster;
}
