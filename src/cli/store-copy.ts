import { lstat, mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import type pg from 'pg';
import type { RunConfig } from '../contract/index.js';
import { RUN_ID_PATTERN } from '../contract/index.js';
import { appendDriftQuarantines, readDriftQuarantines } from '../storage/drift-quarantines.js';
import { firstPrev } from '../storage/journal-record.js';
import { acquireLease, StartupError } from '../storage/lease.js';
import { readNoFollow, readTextNoFollow } from '../storage/no-follow.js';
import { runPaths } from '../storage/paths.js';
import { openDatabase } from '../storage/pg/database.js';
import { headSeal, StoreUnavailable, verifyRows } from '../storage/pg/journal.js';
import { RunLeases } from '../storage/pg/leases.js';
import { readPgRun } from '../storage/pg/run-read.js';
import {
  carriesPassword,
  DATABASE_URL_NAME,
  databaseUrlSecrets,
  parseDatabaseUrl,
  redactDatabaseUrl,
} from '../storage/pg/url.js';
import {
  configMac,
  createRunFiles,
  parseConfig,
  RunIntegrityError,
  removeRunDirectory,
} from '../storage/run-files.js';
import { UsageError } from './env.js';
import { Progress } from './progress.js';
import { terminalText } from './terminal.js';
import { authenticateRuns, offlineKeys, verdictLine } from './verify.js';

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

/** One run as both stores hold it: the sealed config's text and the journal's lines. */
interface StoredRun {
  runId: string;
  config: RunConfig;
  configText: string;
  lines: string[];
  head: string;
  /** The reasons of the drift quarantines recorded for it. */
  drift: string[];
}

type Result = 'copied' | 'already there' | 'refused';

interface Verdict {
  runId: string;
  result: Result;
  events?: number;
  reason?: string;
  /** Drift quarantines written to the target for it. */
  quarantines?: number;
}

/** Records per INSERT statement. */
const BATCH_ROWS = 1000;
const POSTGRES_URL = /^postgres(?:ql)?:\/\//i;

class RunRefused extends Error {
  override readonly name = 'RunRefused';
}

/** Authenticates `lines` as the journal of `config`'s run: the head MAC, or a RunRefused. */
function chainHead(key: Buffer, config: RunConfig, lines: string[]): string {
  let head = configMac(key, config);
  if (lines.length === 0) return head;
  const rows = lines.map((line, seq) => ({ seq, line }));
  try {
    verifyRows(key, config.runId, rows, 0, rows.length, firstPrev(lines[0]!, head), (_e, _l, mac) => {
      head = mac;
    });
  } catch (err) {
    throw new RunRefused(`events: ${(err as Error).message}`);
  }
  return head;
}

/**
 * A run directory's config text and its first `events` records (all its complete lines when not
 * given), authenticated; a RunRefused when anything fails.
 */
async function readRunDir(dataDir: string, runId: string, key: Buffer, events?: number): Promise<StoredRun> {
  const paths = runPaths(dataDir, runId);
  let config: RunConfig;
  let configText: string;
  let lines: string[];
  try {
    configText = await readTextNoFollow(paths.config);
    config = parseConfig(configText, key);
    lines = (await readNoFollow(paths.journal)).toString('utf8').split('\n');
  } catch (err) {
    throw new RunRefused(`its run directory cannot be read: ${(err as Error).message}`);
  }
  if (config.runId !== runId) throw new RunRefused('run-config.json belongs to another run');
  lines.pop(); // after the last newline: nothing, or a torn tail never acknowledged
  if (events !== undefined) {
    if (lines.length < events) throw new RunRefused('events.jsonl changed while it was read');
    lines = lines.slice(0, events);
  }
  return { runId, config, configText, lines, head: chainHead(key, config, lines), drift: [] };
}

/** How `b` differs from `a` (config text, head, the first record not byte for byte the same), or null. */
function difference(a: StoredRun, b: StoredRun): string | null {
  if (a.configText !== b.configText) return 'another run config';
  if (a.lines.length !== b.lines.length || a.head !== b.head)
    return `another head (${b.lines.length} records, not ${a.lines.length})`;
  const at = a.lines.findIndex((line, i) => line !== b.lines[i]);
  return at < 0 ? null : `record ${at} differs`;
}

type Query = Parameters<typeof readPgRun>[0];

/** A run of the database read and authenticated whole (readPgRun), or null when it has no row. */
async function readPgStored(query: Query, key: Buffer, runId: string): Promise<StoredRun | null> {
  const lines: string[] = [];
  let read: Awaited<ReturnType<typeof readPgRun>>;
  try {
    read = await readPgRun(query, key, runId, (_entry, line) => lines.push(line));
  } catch (err) {
    if (!(err instanceof RunIntegrityError)) throw err;
    throw new RunRefused((err as Error).message);
  }
  if (read === null) return null;
  const { rows } = await query<{ reason: string }>(
    `SELECT reason FROM harness_quarantines WHERE run_id = $1 AND kind = 'drift' ORDER BY since, reason`,
    [runId],
  );
  return {
    runId,
    config: read.config,
    configText: read.row.config,
    lines,
    head: read.head,
    drift: rows.map((r) => r.reason),
  };
}

interface Source {
  /** In creation order; each run is read (and authenticated) only when its turn comes. */
  runs: { runId: string; read: () => Promise<StoredRun> }[];
  refused: Verdict[];
}

/** Every run of a data directory (or those `ids` names), authenticated as `harness verify` does. */
async function dirSource(dataDir: string, ids: string[], key: Buffer, pin: string | null): Promise<Source> {
  const checks = await authenticateRuns(dataDir, ids, key, new Progress(), pin, false);
  const drift = await readDriftQuarantines(dataDir);
  const out: Source = { runs: [], refused: [] };
  const ok = [];
  for (const check of checks) {
    if (check.tampered.length > 0 || check.unverifiable.length > 0)
      out.refused.push({ runId: check.name, result: 'refused', reason: verdictLine(check) });
    else ok.push(check);
  }
  ok.sort((a, b) => (a.createdAt ?? '').localeCompare(b.createdAt ?? '') || a.name.localeCompare(b.name));
  out.runs = ok.map((check) => ({
    runId: check.name,
    read: async () => {
      const run = await readRunDir(dataDir, check.name, key, check.events);
      run.drift = drift
        .filter((d) => d.runId === run.runId && d.createdAt === run.config.createdAt)
        .map((d) => d.reason);
      return run;
    },
  }));
  return out;
}

/** Every run of the database (or those `ids` names), each read whole in one snapshot. */
async function pgSource(pool: pg.Pool, ids: string[], key: Buffer, pin: string | null): Promise<Source> {
  const all =
    ids.length > 0
      ? ids
      : (await pool.query<{ run_id: string }>('SELECT run_id FROM harness_runs ORDER BY ordinal')).rows.map(
          (r) => r.run_id,
        );
  const read = async (runId: string): Promise<StoredRun> => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const run = await readPgStored((text, values) => client.query(text, values), key, runId);
      if (run === null) throw new RunRefused('no run with this ID in the database');
      if (pin !== null && run.config.trustPin !== pin)
        throw new RunRefused('sealed under a review-trust pin other than HARNESS_REVIEW_TRUST_SHA256');
      return run;
    } catch (err) {
      throw err instanceof RunRefused ? new RunRefused(`the source's copy: ${err.message}`) : err;
    } finally {
      await client.query('ROLLBACK').catch(() => {});
      client.release();
    }
  };
  return { runs: all.map((runId) => ({ runId, read: () => read(runId) })), refused: [] };
}

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
