import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from '#prom-client';
import type { QuarantineKind } from '../storage/store.js';
import type { ValidatorObserver } from '../validators/runner.js';
import type { PoolObserver } from '../workers/pool.js';

/** What the gauges read when scraped: current figures the bridge already keeps. */
export interface MetricSources {
  queuePending: () => number;
  runQueueMax: () => number;
  poolBusy: () => number;
  poolQueued: () => number;
}

const SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const VALIDATOR_SECONDS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const RECORDS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];

/**
 * The bridge's Prometheus metrics (docs/operations.md "Metrics"), one registry per bridge. The
 * event path only increments counters and observes histograms in place (a few array writes);
 * gauges read figures the bridge already keeps when scraped, so a scrape costs the same however
 * long the bridge has run. Labels come from closed vocabularies (error codes, quarantine kinds),
 * never from client text.
 */
export class BridgeMetrics {
  readonly registry = new Registry();
  /** The two outcomes' series, bound once: an event skips the label lookup. */
  private readonly appended: ReturnType<Counter<'outcome'>['labels']>;
  private readonly duplicates: ReturnType<Counter<'outcome'>['labels']>;
  private readonly refused: Counter<'code'>;
  private readonly busy: Counter;
  private readonly durable: Histogram;
  private readonly batch: Histogram;
  private readonly poolTask: Histogram;
  private readonly validatorTime: Histogram;
  private readonly deadlines: Counter;
  private readonly reads: Counter<'cache'>;
  private readonly quarantines: Counter<'reason'>;
  /** Validator children running now (health reports it too). */
  validatorsRunning = 0;

  constructor(sources: MetricSources) {
    const registers = [this.registry];
    const live = (name: string, help: string, read: () => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read());
        },
      });
    const accepted = new Counter({
      name: 'bridge_events_accepted_total',
      help: 'Events answered 2xx: appended (201) or a repeat of a stored id (200)',
      labelNames: ['outcome'],
      registers,
    });
    this.appended = accepted.labels('appended');
    this.duplicates = accepted.labels('duplicate');
    this.refused = new Counter({
      name: 'bridge_events_refused_total',
      help: 'Event posts refused, by contract error code',
      labelNames: ['code'],
      registers,
    });
    this.busy = new Counter({
      name: 'bridge_busy_total',
      help: 'Requests answered 503 bridge_busy (a full queue, or shutting down)',
      registers,
    });
    this.durable = new Histogram({
      name: 'bridge_event_durable_seconds',
      help: 'From an event request parsed to its 2xx answer, the record durable',
      buckets: SECONDS,
      registers,
    });
    this.batch = new Histogram({
      name: 'bridge_commit_batch_records',
      help: 'Records made durable by one commit-log write (group commit)',
      buckets: RECORDS,
      registers,
    });
    live('bridge_queue_depth', 'Operations admitted and not settled, all runs', sources.queuePending);
    live('bridge_run_queue_depth_max', 'The most operations waiting on any one run now', sources.runQueueMax);
    live('bridge_hash_pool_threads_busy', 'Hash pool threads running a task now', sources.poolBusy);
    live('bridge_hash_pool_queued_tasks', 'Tasks waiting for a hash pool thread', sources.poolQueued);
    this.poolTask = new Histogram({
      name: 'bridge_hash_pool_task_seconds',
      help: 'Hash pool tasks, from submission (queue wait included) to result',
      buckets: SECONDS,
      registers,
    });
    live('bridge_validator_children_running', 'Finish-line validator children running now', () => {
      return this.validatorsRunning;
    });
    this.validatorTime = new Histogram({
      name: 'bridge_validator_seconds',
      help: 'Finish-line validator children, from spawn to exit',
      buckets: VALIDATOR_SECONDS,
      registers,
    });
    this.deadlines = new Counter({
      name: 'bridge_validator_deadline_hits_total',
      help: 'Validator children killed at their deadline',
      registers,
    });
    this.reads = new Counter({
      name: 'bridge_completed_run_reads_total',
      help: 'Completed-run re-verifications, by whether the validator verdict came from the cache',
      labelNames: ['cache'],
      registers,
    });
    this.quarantines = new Counter({
      name: 'bridge_quarantines_total',
      help: 'Runs quarantined, by reason',
      labelNames: ['reason'],
      registers,
    });
    collectDefaultMetrics({ register: this.registry });
  }

  eventAccepted(duplicate: boolean, seconds: number): void {
    (duplicate ? this.duplicates : this.appended).inc();
    this.durable.observe(seconds);
  }

  refusal(code: string, isEvent: boolean): void {
    if (isEvent) this.refused.inc({ code });
    if (code === 'bridge_busy') this.busy.inc();
  }

  batchDurable(records: number): void {
    this.batch.observe(records);
  }

  completedRunRead(hit: boolean): void {
    this.reads.inc({ cache: hit ? 'hit' : 'miss' });
  }

  quarantined(kind: QuarantineKind): void {
    this.quarantines.inc({ reason: kind });
  }

  readonly pool: PoolObserver = {
    taskDone: (seconds) => this.poolTask.observe(seconds),
  };

  readonly validators: ValidatorObserver = {
    started: () => {
      this.validatorsRunning++;
    },
    finished: (seconds, timedOut) => {
      this.validatorsRunning--;
      this.validatorTime.observe(seconds);
      if (timedOut) this.deadlines.inc();
    },
  };

  /** The text exposition format (text/plain; version=0.0.4). */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
