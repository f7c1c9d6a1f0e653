import { readFile } from 'node:fs/promises';
import { answerLine, type BridgeClient } from '../connectors/bridge-client.js';
import type { FlushResult } from '../connectors/outbox.js';
import { flushFile, OutboxFullError, outboxFile, send } from '../connectors/outbox.js';
import type { PageEvent } from './relay-event.js';

/** A slower answer counts as none: the page is answered 202 and the event waits in the outbox. */
const ANSWER_MS = 5000;
/** Requests waiting for their turn at once; past this a page is told to retry (503). */
const WAITING_MAX = 64;
const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 5000;

export type Outcome =
  /** The bridge's answer: it stored the event (or had it already), or refused it. */
  | { kind: 'answered'; status: number; body: Record<string, unknown> }
  /** The bridge did not answer in time (or 5xx, or took no token): the event is in the outbox. */
  | { kind: 'queued' }
  /** Neither delivered nor queued (too many waiting, the outbox full, the relay stopping). */
  | { kind: 'busy'; why: string };

export interface DeliverySummary {
  delivered: number;
  refused: number;
  queued: number;
  /** Events of the run still in its outbox when the relay stopped. */
  waiting: number;
}

/**
 * The relay's way to the bridge: one event at a time, in the order the pages' requests arrived,
 * behind whatever waits in the run's outbox (the connectors' outbox, src/connectors/outbox.ts,
 * so `harness outbox flush` and the run's hooks deliver it too). While events wait, the outbox
 * is offered to the bridge again, 250 ms doubling to 5 s.
 */
export class RelayDelivery {
  private chain: Promise<unknown> = Promise.resolve();
  private waitingRequests = 0;
  private closed = false;
  private retry: NodeJS.Timeout | undefined;
  private retryMs = RETRY_FIRST_MS;
  private readonly counts = { delivered: 0, refused: 0, queued: 0 };
  private readonly file: string;

  constructor(
    private readonly client: BridgeClient,
    private readonly home: string,
    private readonly runId: string,
    private readonly warn: (line: string) => void,
  ) {
    this.file = outboxFile(home, runId);
  }

  submit(event: PageEvent): Promise<Outcome> {
    if (this.closed) return Promise.resolve({ kind: 'busy', why: 'the relay is stopping' });
    if (this.waitingRequests >= WAITING_MAX)
      return Promise.resolve({ kind: 'busy', why: `${WAITING_MAX} events wait already` });
    this.waitingRequests += 1;
    return this.enqueue(() => this.sendOne(event)).finally(() => {
      this.waitingRequests -= 1;
    });
  }

  /** Stops taking events, lets those under way finish, offers the outbox once more; within `budgetMs`. */
  async close(budgetMs: number): Promise<DeliverySummary> {
    this.closed = true;
    clearTimeout(this.retry);
    const until = Date.now() + budgetMs;
    await Promise.race([this.chain, new Promise((r) => setTimeout(r, budgetMs).unref())]);
    const left = until - Date.now();
    if (left > 0) {
      const r = await flushFile(this.client, this.file, Math.min(left, ANSWER_MS)).catch((err: Error) => {
        this.warn(`the outbox: ${err.message}`);
        return null;
      });
      if (r !== null) this.tally(r);
    }
    return { ...this.counts, waiting: await linesIn(this.file) };
  }

  private enqueue<T>(step: () => Promise<T>): Promise<T> {
    const next = this.chain.then(step);
    this.chain = next.catch(() => {});
    return next;
  }

  private async sendOne(event: PageEvent): Promise<Outcome> {
    try {
      const r = await send(this.client, this.home, this.runId, event, ANSWER_MS);
      if (r.flushed !== null) this.tally(r.flushed);
      if (r.kind === 'queued') {
        this.counts.queued += 1;
        this.warn(`the bridge did not take event ${event.id} (${r.why}): it waits in the outbox`);
        this.scheduleRetry();
        return { kind: 'queued' };
      }
      this.counts[r.kind === 'stored' ? 'delivered' : 'refused'] += 1;
      return { kind: 'answered', status: r.answer.status, body: r.answer.body };
    } catch (err) {
      if (err instanceof OutboxFullError) return { kind: 'busy', why: err.message };
      throw err;
    }
  }

  private tally(r: FlushResult): void {
    this.counts.delivered += r.stored;
    this.counts.refused += r.refused.length;
    for (const x of r.refused)
      this.warn(`the bridge refused queued event ${x.event.id}: ${answerLine(x.answer)}`);
  }

  private scheduleRetry(): void {
    if (this.closed || this.retry !== undefined) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      void this.enqueue(async () => {
        const r = await flushFile(this.client, this.file, ANSWER_MS).catch((err: Error) => {
          this.warn(`the outbox: ${err.message}`);
          return null;
        });
        if (r !== null) this.tally(r);
        if (r?.left === 0) {
          this.retryMs = RETRY_FIRST_MS;
          return;
        }
        this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS);
        this.scheduleRetry();
      });
    }, this.retryMs);
  }
}

/** The events a run's outbox holds (one a line), 0 when there is none. */
async function linesIn(file: string): Promise<number> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text.split('\n').filter((l) => l !== '').length;
}
