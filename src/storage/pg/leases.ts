import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type pg from 'pg';
import { StoreUnavailable } from './journal.js';

/** How long a run's write lease lasts unless renewed; a bridge that stops holds it no longer. */
export const RUN_LEASE_TTL_MS = 5000;
/** How long a write waits for another bridge's lease on its run before answering 503 bridge_busy. */
export const RUN_LEASE_WAIT_MS = 5000;
/** How long a lease is kept after the run's last operation, so a busy run is not re-leased per event. */
export const RUN_LEASE_IDLE_MS = 500;
const POLL_MS = 20;

interface Held {
  token: string;
  /** Local time by which the lease is renewed (half its life, so it never lapses while held). */
  renewBy: number;
  release: NodeJS.Timeout | null;
}

/**
 * Per-run write leases in `harness_run_leases`, so that bridges sharing one database write a run
 * one at a time: a bridge takes a run's lease before deciding an event for it (waiting while
 * another bridge holds it), keeps it while the run is busy and gives it back once the run has been
 * idle for RUN_LEASE_IDLE_MS. A lease not renewed expires (by the database's clock) and may then
 * be taken over, each takeover with the next token.
 *
 * The lease is for liveness; the chain's safety does not rest on it: records are keyed by
 * (run_id, seq), so a bridge whose lease lapsed unnoticed can never write a second record at a
 * position another bridge wrote; its commit fails and its run is reopened from the database.
 */
export class RunLeases {
  readonly holder = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private readonly held = new Map<string, Held>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly ttlMs = RUN_LEASE_TTL_MS,
    private readonly waitMs = RUN_LEASE_WAIT_MS,
    private readonly idleMs = RUN_LEASE_IDLE_MS,
  ) {}

  holds(runId: string): boolean {
    const h = this.held.get(runId);
    return h !== undefined && Date.now() < h.renewBy;
  }

  /**
   * Holds the run's lease: 'held' when this bridge already held it (nothing another bridge wrote
   * can be missing), 'taken' when it was taken now (the caller catches up with the database).
   */
  async take(runId: string): Promise<'held' | 'taken'> {
    const h = this.held.get(runId);
    if (h?.release) {
      clearTimeout(h.release);
      h.release = null;
    }
    if (h !== undefined && Date.now() < h.renewBy) return 'held';
    if (h !== undefined && (await this.renew(runId, h))) return 'held';
    this.held.delete(runId);
    const giveUpAt = Date.now() + this.waitMs;
    for (;;) {
      const started = Date.now();
      const { rows } = await this.query<{ token: string }>(
        `INSERT INTO harness_run_leases AS l (run_id, holder, token, expires_at)
         VALUES ($1, $2, 1, now() + $3 * interval '1 millisecond')
         ON CONFLICT (run_id) DO UPDATE SET holder = $2, token = l.token + 1, expires_at = excluded.expires_at
         WHERE l.expires_at < now() OR l.holder = $2
         RETURNING token::text`,
        [runId, this.holder, this.ttlMs],
      );
      if (rows[0] !== undefined) {
        this.held.set(runId, { token: rows[0].token, renewBy: started + this.ttlMs / 2, release: null });
        return 'taken';
      }
      if (Date.now() >= giveUpAt)
        throw new StoreUnavailable(`run ${runId} is being written through another bridge; retry shortly`);
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }

  /** The run went idle: its lease is given back unless it is taken again within RUN_LEASE_IDLE_MS. */
  idle(runId: string): void {
    const h = this.held.get(runId);
    if (h === undefined || h.release !== null) return;
    h.release = setTimeout(() => void this.giveBack(runId, h), this.idleMs);
    h.release.unref();
  }

  /** Gives back every lease (shutdown). */
  async close(): Promise<void> {
    await Promise.all([...this.held].map(([runId, h]) => this.giveBack(runId, h)));
  }

  private async renew(runId: string, h: Held): Promise<boolean> {
    const started = Date.now();
    const { rows } = await this.query(
      `UPDATE harness_run_leases SET expires_at = now() + $4 * interval '1 millisecond'
       WHERE run_id = $1 AND holder = $2 AND token = $3::int8 RETURNING 1`,
      [runId, this.holder, h.token, this.ttlMs],
    );
    if (rows.length === 0) return false;
    h.renewBy = started + this.ttlMs / 2;
    return true;
  }

  private async giveBack(runId: string, h: Held): Promise<void> {
    if (h.release) clearTimeout(h.release);
    if (this.held.get(runId) !== h) return;
    this.held.delete(runId);
    // Expired at once rather than deleted: the next holder's token follows this one's.
    await this.pool
      .query(
        `UPDATE harness_run_leases SET expires_at = now() - interval '1 millisecond'
         WHERE run_id = $1 AND holder = $2 AND token = $3::int8`,
        [runId, this.holder, h.token],
      )
      .catch(() => {});
  }

  private async query<R extends pg.QueryResultRow>(text: string, values: unknown[]) {
    try {
      return await this.pool.query<R>(text, values);
    } catch (err) {
      throw new StoreUnavailable(`the run store is unavailable: ${(err as Error).message}`, { cause: err });
    }
  }
}
