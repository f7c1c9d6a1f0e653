import { lstat, mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import type pg from 'pg';
import { RUN_ID_PATTERN } from '../contract/index.js';
import { appendDriftQuarantines, readDriftQuarantines } from '../storage/drift-quarantines.js';
import { acquireLease, StartupError } from '../storage/lease.js';
import { runPaths } from '../storage/paths.js';
import { openDatabase } from '../storage/pg/database.js';
import { headSeal, StoreUnavailable } from '../storage/pg/journal.js';
import { RunLeases } from '../storage/pg/leases.js';
import {
  carriesPassword,
  DATABASE_URL_NAME,
  databaseUrlSecrets,
  parseDatabaseUrl,
  redactDatabaseUrl,
} from '../storage/pg/url.js';
import { createRunFiles, removeRunDirectory } from '../storage/run-files.js';
import { UsageError } from './env.js';
import {
  difference,
  dirSource,
  pgSource,
  type Query,
  type Result,
  RunRefused,
  readPgStored,
  readRunDir,
  type Source,
  type StoredRun,
  type Verdict,
} from './store-copy-sources.js';
import { terminalText } from './terminal.js';
import { offlineKeys } from './verify.js';

/**
 * `harness store copy --from <DIR|URL> --to <URL|DIR> [--run ID...]` (docs/scale-out.md, "Moving
 * runs between stores"): copies runs between a data directory and a PostgreSQL database. Every
 * run is read and authenticated whole on the source (config, every record chained, the head; a
 * data directory as `harness verify` reads it), written to the target (one transaction per run
 * into PostgreSQL, an atomically placed run directory into a data directory), read back from the
 * target, authenticated again and compared byte for byte. A run the target already holds
 * identically is skipped; one it holds differently is refused, never overwritten.
 * Exit 0 every run copied or already there, 1 any run refused, 2 nothing could be done.
 */

/** Records per INSERT statement. */
const BATCH_ROWS = 1000;
const POSTGRES_URL = /^postgres(?:ql)?:\/\//i;

/** Reads each run of the source in turn and writes it; a run the source refuses is reported. */
async function copyEach(source: Source, write: (run: StoredRun) => Promise<Verdict>): Promise<Verdict[]> {
  const out = [...source.refused];
  for (const { runId, read } of source.runs) {
    const run = await read().catch((err: Error) => err);
    if (run instanceof RunRefused) out.push({ runId, result: 'refused', reason: run.message });
    else if (run instanceof Error) throw run;
    else out.push(await write(run));
  }
  return out;
}

/**
 * Writes one run into the database in one transaction under the run's write lease: its row with
 * the sealed head, its records in batches, its drift quarantines; then reads it back in the same
 * transaction, which commits only when the copy is the source's byte for byte.
 */
async function intoPg(pool: pg.Pool, leases: RunLeases, key: Buffer, run: StoredRun): Promise<Verdict> {
  const { runId } = run;
  try {
    await leases.take(runId);
  } catch (err) {
    if (!(err instanceof StoreUnavailable)) throw err;
    return { runId, result: 'refused', reason: 'a bridge is writing it (it holds the run lease)' };
  }
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const query: Query = (text, values) => client.query(text, values);
    const present = await readPgStored(query, key, runId).catch((err: Error) => {
      if (err instanceof RunRefused)
        throw new RunRefused(`the target holds it and it fails authentication: ${err.message}`);
      throw err;
    });
    if (present === null) {
      await client.query(
        `INSERT INTO harness_runs (run_id, created_at, config, head_count, head_mac, head_seal)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [
          runId,
          run.config.createdAt,
          run.configText,
          run.lines.length,
          run.head,
          headSeal(key, runId, run.lines.length, run.head),
        ],
      );
      for (let from = 0; from < run.lines.length; from += BATCH_ROWS) {
        const batch = run.lines.slice(from, from + BATCH_ROWS);
        await client.query(
          `INSERT INTO harness_records (run_id, seq, line)
           SELECT $1, seq, line FROM unnest($2::int8[], $3::text[]) AS r(seq, line)`,
          [runId, batch.map((_, i) => from + i), batch],
        );
      }
      const back = await readPgStored(query, key, runId);
      const diff = back === null ? 'its row is missing' : difference(run, back);
      if (diff !== null) throw new RunRefused(`its copy read back differs: ${diff}`);
    } else {
      const diff = difference(run, present);
      if (diff !== null) throw new RunRefused(`the target holds it differently: ${diff}`);
    }
    const drift = await client.query(
      `INSERT INTO harness_quarantines (run_id, reason, kind, since)
       SELECT $1, reason, 'drift', $3 FROM unnest($2::text[]) AS reason ON CONFLICT DO NOTHING`,
      [runId, run.drift, new Date().toISOString()],
    );
    await client.query('COMMIT');
    const result = present === null ? 'copied' : 'already there';
    return { runId, result, events: run.lines.length, quarantines: drift.rowCount ?? 0 };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    if (err instanceof RunRefused) return { runId, result: 'refused', reason: err.message };
    throw err;
  } finally {
    client.release();
  }
}

/**
 * Writes one run into a data directory as the file store creates one (createRunFiles: a temporary
 * directory renamed into place), reads it back and compares it; a copy that differs is removed.
 */
async function intoDir(
  dataDir: string,
  key: Buffer,
  run: StoredRun,
  recorded: Set<string>,
): Promise<Verdict> {
  const { runId } = run;
  const paths = runPaths(dataDir, runId);
  const exists = await lstat(paths.dir).then(
    () => true,
    (err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? false : Promise.reject(err)),
  );
  try {
    if (exists) {
      const present = await readRunDir(dataDir, runId, key).catch((err: Error) => {
        throw err instanceof RunRefused
          ? new RunRefused(`the target holds it and it fails authentication: ${err.message}`)
          : err;
      });
      const diff = difference(run, present);
      if (diff !== null) throw new RunRefused(`the target holds it differently: ${diff}`);
    } else {
      await createRunFiles(dataDir, paths, key, run.config, run.lines.map((l) => `${l}\n`).join(''));
      const back = await readRunDir(dataDir, runId, key).catch((err: Error) => err);
      const diff = back instanceof Error ? back.message : difference(run, back);
      if (diff !== null) {
        await removeRunDirectory(dataDir, paths.dir, runId);
        throw new RunRefused(`its copy read back differs: ${diff}`);
      }
    }
  } catch (err) {
    if (err instanceof RunRefused) return { runId, result: 'refused', reason: err.message };
    throw err;
  }
  const createdAt = run.config.createdAt;
  const missing = run.drift.filter((reason) => !recorded.has(JSON.stringify([runId, createdAt, reason])));
  if (missing.length > 0)
    await appendDriftQuarantines(
      dataDir,
      missing.map((reason) => ({ runId, createdAt, reason })),
    );
  return {
    runId,
    result: exists ? 'already there' : 'copied',
    events: run.lines.length,
    quarantines: missing.length,
  };
}

const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

function line(v: Verdict): string {
  const drift = v.quarantines ? `, ${plural(v.quarantines, 'drift quarantine')} recorded` : '';
  if (v.result === 'refused') return `refused ${v.runId}: ${v.reason}`;
  return `${v.result} ${v.runId} (${plural(v.events ?? 0, 'event')}${drift})`;
}

interface CopyOptions {
  from: string;
  to: string;
  run?: string[];
  json?: boolean;
}

export function registerStoreCopy(program: Command): void {
  const store = program.command('store').description('run store maintenance');
  store
    .command('copy')
    .description('copy runs between a data directory and a PostgreSQL database, verifying every record')
    .requiredOption(
      '--from <dir|url>',
      'the source: a data directory, a postgres:// URL without its password (PGPASSWORD or ~/.pgpass), or env:NAME for the URL in variable NAME',
    )
    .requiredOption(
      '--to <url|dir>',
      'the target: a data directory, a postgres:// URL or env:NAME, as for --from',
    )
    .option('--run <id...>', 'only these runs (default: every run of the source)')
    .option('--json', 'print a machine-readable report')
    .action(async (opts: CopyOptions) => {
      process.exitCode = await storeCopy(opts);
    });
}

/**
 * A side as given: `env:NAME` is the URL the variable NAME holds, so that a URL with its password
 * never appears among the process's arguments, which every local user can list. A URL given as
 * an argument must carry no password (PGPASSWORD or ~/.pgpass give it to node-postgres instead).
 */
function side(option: '--from' | '--to', value: string, env: NodeJS.ProcessEnv): string {
  const named = /^env:(.*)$/s.exec(value)?.[1];
  if (named !== undefined) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(named))
      throw new UsageError(`${option}: env:${named} is not a variable name`);
    const url = env[named];
    if (!url) throw new UsageError(`${option} names ${named}, which is not set in the environment`);
    if (!POSTGRES_URL.test(url))
      throw new UsageError(`${option} names ${named}, which does not hold a postgres:// URL`);
    return url;
  }
  if (POSTGRES_URL.test(value) && carriesPassword(value))
    throw new UsageError(
      `${option} holds a password, which every local user can read among the process's arguments: leave it out and set PGPASSWORD (or ~/.pgpass), or give the URL in a variable as env:NAME`,
    );
  return value;
}

async function storeCopy(given: CopyOptions): Promise<number> {
  const isUrl = (s: string) => POSTGRES_URL.test(s);
  const opts = {
    ...given,
    from: side('--from', given.from, process.env),
    to: side('--to', given.to, process.env),
  };
  if (isUrl(opts.from) === isUrl(opts.to))
    throw new UsageError('one of --from and --to must be a data directory and the other a postgres:// URL');
  const ids = opts.run ?? [];
  const bad = ids.find((id) => !RUN_ID_PATTERN.test(id));
  if (bad !== undefined) throw new UsageError(`run ID ${JSON.stringify(bad)} is not canonical`);
  const url = isUrl(opts.from) ? opts.from : opts.to;
  const dir = resolve(isUrl(opts.from) ? opts.to : opts.from);
  const intoDatabase = isUrl(opts.to);
  const which = intoDatabase ? '--to' : '--from';
  try {
    parseDatabaseUrl(url);
  } catch (err) {
    throw new UsageError((err as Error).message.replace(DATABASE_URL_NAME, which));
  }
  const { key, pin } = offlineKeys();
  const secrets = databaseUrlSecrets(url);
  const scrub = (text: string) => secrets.reduce((out, s) => out.split(s).join('***'), text);
  const db = await openDatabase({
    url,
    poolSize: 2,
    log: (m) => process.stderr.write(`harness store copy: ${scrub(m)}\n`),
  }).catch((err: Error) => {
    throw err instanceof StartupError
      ? new UsageError(scrub(err.message).replace(DATABASE_URL_NAME, which))
      : err;
  });
  const verdicts: Verdict[] = [];
  try {
    if (intoDatabase) {
      const source = await dirSource(dir, ids, key, pin);
      const leases = new RunLeases(db.pool);
      try {
        verdicts.push(...(await copyEach(source, (run) => intoPg(db.pool, leases, key, run))));
      } finally {
        await leases.close();
      }
    } else {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      const lease = await acquireLease(dir).catch((err: Error) => {
        throw err instanceof StartupError ? new UsageError(`--to: ${err.message}`) : err;
      });
      try {
        const source = await pgSource(db.pool, ids, key, pin);
        const recorded = new Set(
          (await readDriftQuarantines(dir)).map((d) => JSON.stringify([d.runId, d.createdAt, d.reason])),
        );
        verdicts.push(...(await copyEach(source, (run) => intoDir(dir, key, run, recorded))));
      } finally {
        await lease.release();
      }
    }
  } finally {
    await db.close();
  }
  report(
    verdicts,
    intoDatabase ? dir : redactDatabaseUrl(url),
    intoDatabase ? redactDatabaseUrl(url) : dir,
    opts.json === true,
    scrub,
  );
  return verdicts.some((v) => v.result === 'refused') ? 1 : 0;
}

function report(
  verdicts: Verdict[],
  from: string,
  to: string,
  json: boolean,
  scrub: (s: string) => string,
): void {
  const n = (r: Result) => verdicts.filter((v) => v.result === r).length;
  const copied = n('copied');
  const already = n('already there');
  const refused = n('refused');
  if (json) {
    const runs = verdicts.map((v) => (v.reason === undefined ? v : { ...v, reason: scrub(v.reason) }));
    process.stdout.write(`${JSON.stringify({ from, to, runs, copied, alreadyThere: already, refused })}\n`);
    return;
  }
  for (const v of verdicts) process.stdout.write(`${terminalText(scrub(line(v)))}\n`);
  const wrote = copied > 0 || verdicts.some((v) => (v.quarantines ?? 0) > 0);
  process.stdout.write(
    `${terminalText(`${copied} copied, ${already} already there, ${refused} refused, from ${from} to ${to}${wrote ? '' : ': nothing written'}`)}\n`,
  );
}
