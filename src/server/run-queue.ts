import { BridgeError, GLOBAL_QUEUE_MAX, RUN_QUEUE_MAX } from '../contract/index.js';

/**
 * Serializes every read and write of one run ID while different runs proceed in parallel. Both the
 * per-run and the global number of waiting operations are bounded: past them the caller gets 503
 * `bridge_busy` at once instead of an ever-growing queue.
 */
export class RunQueue {
  private readonly tails = new Map<string, { tail: Promise<unknown>; waiting: number }>();
  private total = 0;

  constructor(
    private readonly perRun = RUN_QUEUE_MAX,
    private readonly global = GLOBAL_QUEUE_MAX,
  ) {}

  get pending(): number {
    return this.total;
  }

  run<T>(runId: string, op: () => Promise<T>): Promise<T> {
    const slot = this.tails.get(runId) ?? { tail: Promise.resolve(), waiting: 0 };
    if (slot.waiting >= this.perRun || this.total >= this.global) {
      throw new BridgeError('bridge_busy', 'the bridge is busy; retry shortly', [], { 'retry-after': '1' });
    }
    slot.waiting++;
    this.total++;
    const result = slot.tail.then(op);
    const settled: Promise<void> = result.then(
      (): void => this.done(runId, slot, settled),
      (): void => this.done(runId, slot, settled),
    );
    slot.tail = settled;
    this.tails.set(runId, slot);
    return result;
  }

  private done(
    runId: string,
    slot: { tail: Promise<unknown>; waiting: number },
    settled: Promise<unknown>,
  ): void {
    slot.waiting--;
    this.total--;
    if (slot.waiting === 0 && slot.tail === settled) this.tails.delete(runId);
  }
}
