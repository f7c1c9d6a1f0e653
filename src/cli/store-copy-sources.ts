import type pg from 'pg';
import type { RunConfig } from '../contract/index.js';
import { readDriftQuarantines } from '../storage/drift-quarantines.js';
import { firstPrev } from '../storage/journal-record.js';
import { readNoFollow, readTextNoFollow } from '../storage/no-follow.js';
import { runPaths } from '../storage/paths.js';
import { verifyRows } from '../storage/pg/journal.js';
import { readPgRun } from '../storage/pg/run-read.js';
import { configMac, parseConfig, RunIntegrityError } from '../storage/run-files.js';
import { Progress } from './progress.js';
import { authenticateRuns, verdictLine } from './verify.js';

/**
 * The two sides `harness store copy` reads (src/cli/store-copy.ts): a run as a data directory and
 * a PostgreSQL database both hold it, read and authenticated whole, and the runs of each kind of
 * source in creation order. Whatever fails authentication is a RunRefused, reported per run.
 */

/** One run as both stores hold it: the sealed config's text and the journal's lines. */
export interface StoredRun {
  runId: string;
  config: RunConfig;
  configText: string;
  lines: string[];
  head: string;
  /** The reasons of the drift quarantines recorded for it. */
  drift: string[];
}

export type Result = 'copied' | 'already there' | 'refused';

export interface Verdict {
  runId: string;
  result: Result;
  events?: number;
  reason?: string;
  /** Drift quarantines written to the target for it. */
  quarantines?: number;
}

export class RunRefused extends Error {
  override readonly name = 'RunRefused';
}

/** Authenticates `lines` as the journal of `config`'s run: the head MAC, or a RunRefused. */
export function chainHead(key: Buffer, config: RunConfig, lines: string[]): string {
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
export async function readRunDir(
  dataDir: string,
  runId: string,
  key: Buffer,
  events?: number,
): Promise<StoredRun> {
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
export function difference(a: StoredRun, b: StoredRun): string | null {
  if (a.configText !== b.configText) return 'another run config';
  if (a.lines.length !== b.lines.length || a.head !== b.head)
    return `another head (${b.lines.length} records, not ${a.lines.length})`;
  const at = a.lines.findIndex((line, i) => line !== b.lines[i]);
  return at < 0 ? null : `record ${at} differs`;
}

export type Query = Parameters<typeof readPgRun>[0];

/** A run of the database read and authenticated whole (readPgRun), or null when it has no row. */
export async function readPgStored(query: Query, key: Buffer, runId: string): Promise<StoredRun | null> {
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

export interface Source {
  /** In creation order; each run is read (and authenticated) only when its turn comes. */
  runs: { runId: string; read: () => Promise<StoredRun> }[];
  refused: Verdict[];
}

/** Every run of a data directory (or those `ids` names), authenticated as `harness verify` does. */
export async function dirSource(
  dataDir: string,
  ids: string[],
  key: Buffer,
  pin: string | null,
): Promise<Source> {
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
export async function pgSource(
  pool: pg.Pool,
  ids: string[],
  key: Buffer,
  pin: string | null,
): Promise<Source> {
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
