import type pg from 'pg';
import type { ArtifactClaim, JournalEntry, RecordSeal, StoredEvent } from '../../contract/index.js';
import { JOURNAL_MAX_BYTES, JOURNAL_RECORD_MAX_BYTES } from '../../contract/index.js';
import {
  claimedPrevOf,
  EventTooLargeError,
  eventBytesOverLimit,
  sealRecord,
  verifyLine,
} from '../journal-record.js';
import { mac } from '../mac.js';
import type { Appended, RunJournal } from '../types.js';

/**
 * A run's journal in PostgreSQL: one `harness_records` row per record holding the exact line the
 * file store writes to `events.jsonl` (without its newline), and the run's row in `harness_runs`
 * holding its sealed head (record count and newest MAC, MAC'd under the integrity key). Rows are
 * written only by the commit queue below, one statement per batch; reads re-authenticate every
 * row they return, as the file journal's do.
 */

/** A batch commit failed: its records were not acknowledged and the runs they belong to reload. */
export class StoreUnavailable extends Error {
  override readonly name = 'StoreUnavailable';
}

/** The sealed head of a run: what its `harness_runs` row says the journal holds. */
export function headSeal(key: Buffer, runId: string, count: number, head: string): string {
  return mac(key, 'harness.pg-head.v1', { runId, count, head });
}

const noop = () => {};

export class PgJournal implements RunJournal {
  private failed: Error | null = null;
  private last: Promise<void> = Promise.resolve();
  private readonly roomBelow: number;

  constructor(
    private readonly queue: CommitQueue,
    private readonly pool: pg.Pool,
    private readonly key: Buffer,
    readonly runId: string,
    private records: number,
    private head: string,
    private size: number,
    private readonly maxBytes: number = JOURNAL_MAX_BYTES,
  ) {
    this.roomBelow = maxBytes - JOURNAL_RECORD_MAX_BYTES;
  }

  get count(): number {
    return this.records;
  }

  get full(): boolean {
    return this.size > this.roomBelow;
  }

  get headMac(): string {
    return this.head;
  }

  get broken(): Error | null {
    return this.failed;
  }

  /** A commit of this journal's records failed: nothing after its last durable record is trusted. */
  fail(err: Error): void {
    this.failed ??= err;
  }

  /** Records another bridge appended (authenticated by the caller): this journal now ends at them. */
  advance(count: number, head: string, bytes: number): void {
    this.records = count;
    this.head = head;
    this.size += bytes;
  }

  /** A config resealed before the first append (only then): record 0 will chain from its MAC. */
  rebase(genesis: string): void {
    if (this.records > 0) throw new Error('a journal with records cannot be rebased');
    this.head = genesis;
  }

  idle(): Promise<void> {
    return this.last.then(noop, noop);
  }

  append(event: StoredEvent, claim: ArtifactClaim | null, seal: RecordSeal | null = null): Appended {
    if (this.failed) throw this.failed;
    const seq = this.records;
    const sealed = sealRecord(this.key, this.runId, seq, this.head, event, claim, seal);
    const over = eventBytesOverLimit(sealed.eventJson);
    if (over > 0) throw new EventTooLargeError(over);
    const bytes = Buffer.byteLength(sealed.line);
    if (bytes > JOURNAL_RECORD_MAX_BYTES) throw new RangeError('journal record exceeds its ceiling');
    if (this.size + bytes > this.maxBytes) throw new RangeError('the journal is at its ceiling');
    this.records++;
    this.size += bytes;
    this.head = sealed.mac;
    const durable = this.queue.add(this, seq, sealed.line.slice(0, -1), sealed.mac);
    this.last = durable;
    return { entry: { seq, event, claim, seal }, durable, eventJson: sealed.eventJson };
  }

  /** Records [from, to), each row re-authenticated and chained to the one before. */
  async read(from: number, to: number): Promise<JournalEntry[]> {
    await this.idle();
    if (this.failed) throw this.failed;
    if (from >= to) return [];
    const { rows } = await this.pool.query<{ seq: number; line: string }>({
      text: 'SELECT seq::int4 AS seq, line FROM harness_records WHERE run_id = $1 AND seq >= $2 AND seq < $3 ORDER BY seq',
      values: [this.runId, from, to],
    });
    return verifyRows(this.key, this.runId, rows, from, to, null);
  }
}

/**
 * Authenticates rows [from, to) of a run: each present once and in order, each MAC binding its
 * run and position, each chained to the one before (the first to `prev`, or to what it claims
 * when `prev` is null: its MAC still binds the claim).
 */
export function verifyRows(
  key: Buffer,
  runId: string,
  rows: { seq: number; line: string }[],
  from: number,
  to: number,
  prev: string | null,
  onEntry?: (entry: JournalEntry, line: string, mac: string) => void,
): JournalEntry[] {
  const entries: JournalEntry[] = [];
  let expected = prev;
  for (let i = 0; i < rows.length; i++) {
    const seq = from + i;
    const row = rows[i]!;
    if (row.seq !== seq) throw new JournalIntegrity(`journal record ${seq} is missing`);
    const r = verifyLine(key, runId, row.line, seq, expected ?? claimedPrevOf(row.line, seq));
    expected = r.mac;
    const entry = { seq, event: r.event, claim: r.claim, seal: r.seal ?? null };
    onEntry?.(entry, row.line, r.mac);
    entries.push(entry);
  }
  if (from + rows.length < to) throw new JournalIntegrity(`journal record ${from + rows.length} is missing`);
  return entries;
}

/** A row missing from the middle or the end of a run's records (JournalAuthError's kin). */
export class JournalIntegrity extends Error {
  override readonly name = 'JournalIntegrity';
}

interface Pending {
  journal: PgJournal;
  seq: number;
  line: string;
  mac: string;
  resolve: () => void;
  reject: (err: Error) => void;
}

/**
 * Group commit for every run of one bridge: records queued while a commit is in flight share the
 * next one, written by one statement (its own transaction, committed with synchronous_commit on
 * before it answers) that inserts every record and moves each run's sealed head. The statement's
 * size does not depend on how many records a run already holds: the append cost stays flat.
 *
 * A failed commit acknowledges none of its records (their answers are 503 bridge_busy) and breaks
 * each journal it touched: records queued after them chain on them and are refused too, and the
 * store reopens the run from the database, which then holds the truth (a commit whose answer was
 * lost may have landed; the client's retry with the same event id then finds it).
 */
/** PostgreSQL's unique_violation: a (run_id, seq) another writer committed first. */
const UNIQUE_VIOLATION = '23505';

export class CommitQueue {
  private pending: Pending[] = [];
  private running = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly key: Buffer,
    private readonly onBatch: (records: number) => void = noop,
  ) {}

  add(journal: PgJournal, seq: number, line: string, mac: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ journal, seq, line, mac, resolve, reject });
      if (!this.running) {
        this.running = true;
        // Records queued in the same turn (a burst of requests parsed together) share the batch.
        setImmediate(() => void this.drain());
      }
    });
  }

  /** Resolves when nothing is queued or in flight. */
  async idle(): Promise<void> {
    while (this.running) await new Promise((r) => setImmediate(r));
  }

  private async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const batch: Pending[] = [];
      for (const p of this.pending.splice(0)) {
        if (p.journal.broken) p.reject(p.journal.broken);
        else batch.push(p);
      }
      if (batch.length === 0) continue;
      const err = await this.settle(batch);
      if (err === null) continue;
      const runs = new Map<PgJournal, Pending[]>();
      for (const p of batch) {
        const records = runs.get(p.journal);
        if (records === undefined) runs.set(p.journal, [p]);
        else records.push(p);
      }
      if (runs.size > 1 && (err as { code?: unknown }).code === UNIQUE_VIOLATION) {
        // One run's records clashed with rows another bridge committed after its lease lapsed. The
        // statement stored nothing, so each run is committed on its own and only that run fails.
        for (const records of runs.values()) {
          const own = await this.settle(records);
          if (own !== null) this.failAll(records, own);
        }
      } else this.failAll(batch, err);
    }
    this.running = false;
  }

  /** Commits `batch` and acknowledges it: null, or the error that stored none of it. */
  private async settle(batch: Pending[]): Promise<unknown> {
    try {
      await this.commit(batch);
    } catch (err) {
      return err;
    }
    this.onBatch(batch.length);
    for (const p of batch) p.resolve();
    return null;
  }

  private failAll(batch: Pending[], err: unknown): void {
    const failure = new StoreUnavailable(
      `the run store could not commit ${batch.length} record${batch.length === 1 ? '' : 's'}: ${(err as Error).message}`,
      { cause: err },
    );
    for (const p of batch) p.journal.fail(failure);
    for (const p of batch) p.reject(failure);
  }

  private async commit(batch: Pending[]): Promise<void> {
    const ids: string[] = [];
    const seqs: number[] = [];
    const lines: string[] = [];
    // Each run's newest record in the batch moves its head.
    const heads = new Map<string, Pending>();
    for (const p of batch) {
      ids.push(p.journal.runId);
      seqs.push(p.seq);
      lines.push(p.line);
      heads.set(p.journal.runId, p);
    }
    const headIds: string[] = [];
    const counts: number[] = [];
    const macs: string[] = [];
    const seals: string[] = [];
    for (const [runId, p] of heads) {
      headIds.push(runId);
      counts.push(p.seq + 1);
      macs.push(p.mac);
      seals.push(headSeal(this.key, runId, p.seq + 1, p.mac));
    }
    // One statement, so one transaction: the records and the heads that name them commit together.
    // A head moves only from the count this bridge saw (another writer's records fail the insert on
    // the primary key first; this keeps a head from ever moving backwards).
    await this.pool.query({
      text: `WITH ins AS (
        INSERT INTO harness_records (run_id, seq, line)
        SELECT * FROM unnest($1::text[], $2::int8[], $3::text[])
      )
      UPDATE harness_runs AS r SET head_count = v.c, head_mac = v.m, head_seal = v.s
      FROM unnest($4::text[], $5::int8[], $6::text[], $7::text[]) AS v(id, c, m, s)
      WHERE r.run_id = v.id AND r.head_count < v.c`,
      values: [ids, seqs, lines, headIds, counts, macs, seals],
    });
  }
}
