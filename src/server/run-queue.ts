import { BridgeError, GLOBAL_QUEUE_MAX, RUN_QUEUE_MAX } from '../contract/index.js';

interface Slot {
  tail: Promise<unknown>;
  waiting: number;
}

/**
 * Serializes every read and write of one run ID while different runs proceed in parallel. Both the
 * per-run and the global number of waiting operations are bounded: past them the caller gets 503
 * `bridge_busy` at once instead of an ever-growing queue.
 */
export class RunQueue {
  private readonly tails = new Map<string, Slot>();
  private total = 0;
  private closing = false;
  private drained: (() => void) | null = null;
  private drain: Promise<void> | null = null;

  constructor(
    private readonly perRun = RUN_QUEUE_MAX,
    private readonly global = GLOBAL_QUEUE_MAX,
  ) {}

  get pending(): number {
    return this.total;
  }

  /** The most operations admitted and not settled on any one run (bounded by the global bound). */
  get maxRunPending(): number {
    let most = 0;
    for (const slot of this.tails.values()) if (slot.waiting > most) most = slot.waiting;
    return most;
  }

  /** True once `close` was called: every later operation is refused. */
  get closed(): boolean {
    return this.closing;
  }

  /**
   * Shutdown: refuses every later operation (503 `bridge_busy`, the bridge is shutting down) and
   * resolves once every admitted one has settled, so what was accepted is answered first.
   */
  close(): Promise<void> {
    this.closing = true;
    if (this.total === 0) return Promise.resolve();
    this.drain ??= new Promise((resolve) => {
      this.drained = resolve;
    });
    return this.drain;
  }

  run<T>(runId: string, op: () => Promise<T>): Promise<T> {
    const slot = this.admit(runId);
    const result = slot.tail.then(op);
    const settled: Promise<void> = result.then(
      (): void => this.done(runId, slot),
      (): void => this.done(runId, slot),
    );
    slot.tail = settled;
    return result;
  }

  /**
   * For an operation whose exclusive part ends before its whole effect: `op` resolves with
   * `{ value, settled }` once the part that needs the run to itself is done (an append sealed and
   * queued in journal order), and the next operation on the run may start then. `settled` (the
   * record's fdatasync, shared with everything queued meanwhile: group commit) still counts against
   * the bounds until it settles; the returned promise resolves with `value` only after it.
   */
  runThenSettle<T>(runId: string, op: () => Promise<{ value: T; settled: Promise<void> }>): Promise<T> {
    const slot = this.admit(runId);
    const result = slot.tail.then(op);
    slot.tail = result.then(
      () => {},
      () => {},
    );
    const whole = result.then(({ value, settled }) => settled.then(() => value));
    whole.then(
      () => this.done(runId, slot),
      () => this.done(runId, slot),
    );
    return whole;
  }

  private admit(runId: string): Slot {
    const slot = this.tails.get(runId) ?? { tail: Promise.resolve(), waiting: 0 };
    if (slot.waiting >= this.perRun || this.total >= this.global || this.closing) {
      if (this.closing) throw shuttingDown();
      throw new BridgeError('bridge_busy', 'the bridge is busy; retry shortly', [], { 'retry-after': '1' });
    }
    slot.waiting++;
    this.total++;
    this.tails.set(runId, slot);
    return slot;
  }

  private done(runId: string, slot: Slot): void {
    slot.waiting--;
    this.total--;
    if (this.total === 0) this.drained?.();
    // No operation admitted to this slot is still waiting or in flight: its tail has settled.
    if (slot.waiting === 0 && this.tails.get(runId) === slot) this.tails.delete(runId);
  }
}

/** The answer to any request once shutdown has begun: retry (the restarted bridge takes it). */
export const shuttingDown = (): BridgeError =>
  new BridgeError('bridge_busy', 'the bridge is shutting down; retry shortly', [], {
    'retry-after': '1',
    connection: 'close',
  });
