import type pg from 'pg';
import type { JournalEntry, RunConfig } from '../../contract/index.js';
import { firstPrev, JournalAuthError } from '../journal-record.js';
import { macEqual } from '../mac.js';
import { configMac, parseConfig, RunIntegrityError } from '../run-files.js';
import { headSeal, JournalIntegrity, verifyRows } from './journal.js';

/** Rows read per query while a run is read: its records are streamed, never all held at once. */
const PAGE_ROWS = 2000;

/** What the run's `harness_runs` row holds. */
export interface RunRow {
  created_at: string;
  config: string;
  head_count: string;
  head_mac: string;
  head_seal: string;
}

type Query = <R extends pg.QueryResultRow>(text: string, values: unknown[]) => Promise<{ rows: R[] }>;

export const RUN_ROW_SQL =
  'SELECT created_at, config, head_count::text, head_mac, head_seal FROM harness_runs WHERE run_id = $1';

/**
 * Reads and authenticates one run of the database: its sealed config, every record in order and
 * chained from the config's MAC, and the sealed head, which must name exactly the newest record (a
 * head ahead of the records means records were deleted; one behind, records were added outside
 * the bridge). `onConfig` is told the authentic config before any record is read (it may throw a
 * RunIntegrityError of its own); each authentic record goes to `onEntry` as it streams by. Null when the run has no
 * row; a RunIntegrityError (its reason) when anything fails. The store opens runs with it and
 * `harness store copy` reads them with it.
 */
export async function readPgRun(
  query: Query,
  key: Buffer,
  runId: string,
  onEntry: (entry: JournalEntry, line: string, mac: string) => void = () => {},
  onConfig: (config: RunConfig) => void = () => {},
): Promise<{ row: RunRow; config: RunConfig; count: number; head: string } | null> {
  const fail = (reason: string): never => {
    throw new RunIntegrityError(reason);
  };
  const row = (await query<RunRow>(RUN_ROW_SQL, [runId])).rows[0];
  if (row === undefined) return null;
  let config: RunConfig;
  try {
    config = parseConfig(row.config, key);
  } catch (err) {
    return fail(`run config: ${(err as Error).message}`);
  }
  if (config.runId !== runId) fail('its run config belongs to another run');
  if (config.createdAt !== row.created_at) fail('its run config differs from its harness_runs row');
  const headCount = Number(row.head_count);
  if (!macEqual(row.head_seal, headSeal(key, runId, headCount, row.head_mac)))
    fail('its sealed head fails authentication');
  onConfig(config);
  const genesis = configMac(key, config);
  let count = 0;
  let head = genesis;
  for (;;) {
    const page = await query<{ seq: number; line: string }>(
      'SELECT seq::int4 AS seq, line FROM harness_records WHERE run_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3',
      [runId, count, PAGE_ROWS],
    );
    if (page.rows.length === 0) break;
    try {
      const prev = count === 0 ? firstPrev(page.rows[0]!.line, genesis) : head;
      verifyRows(key, runId, page.rows, count, count + page.rows.length, prev, (entry, line, mac) => {
        onEntry(entry, line, mac);
        head = mac;
      });
    } catch (err) {
      if (err instanceof JournalAuthError || err instanceof JournalIntegrity) fail(`records: ${err.message}`);
      throw err;
    }
    count += page.rows.length;
    if (page.rows.length < PAGE_ROWS) break;
  }
  if (count < headCount)
    fail(`rolled back to record ${count} of ${headCount} (its sealed head names the later one)`);
  if (count > headCount) fail(`holds ${count - headCount} records after its sealed head`);
  if (!macEqual(head, row.head_mac)) fail(`its records differ from its sealed head at record ${count}`);
  return { row, config, count, head };
}

/**
 * The records another bridge appended to a run after `count` (whose MAC is `head`), as its row's
 * sealed head now names them: each authenticated and chained to `head`, the last one the head.
 * Null when the run must be opened afresh instead: its row is gone, its head moved back or fails
 * authentication, or a record fails (the reopen then quarantines it with the reason).
 */
export async function readPgRecordsAfter(
  query: Query,
  key: Buffer,
  runId: string,
  count: number,
  head: string,
): Promise<{ entries: JournalEntry[]; count: number; head: string; bytes: number } | null> {
  const row = (await query<RunRow>(RUN_ROW_SQL, [runId])).rows[0];
  if (row === undefined) return null;
  const headCount = Number(row.head_count);
  if (headCount === count && macEqual(row.head_mac, head)) return { entries: [], count, head, bytes: 0 };
  if (headCount < count || !macEqual(row.head_seal, headSeal(key, runId, headCount, row.head_mac)))
    return null;
  const { rows } = await query<{ seq: number; line: string }>(
    'SELECT seq::int4 AS seq, line FROM harness_records WHERE run_id = $1 AND seq >= $2 AND seq < $3 ORDER BY seq',
    [runId, count, headCount],
  );
  let last = head;
  let bytes = 0;
  let entries: JournalEntry[];
  try {
    entries = verifyRows(key, runId, rows, count, headCount, head, (_, line, mac) => {
      bytes += Buffer.byteLength(line) + 1;
      last = mac;
    });
  } catch {
    return null;
  }
  return macEqual(last, row.head_mac) ? { entries, count: headCount, head: last, bytes } : null;
}
