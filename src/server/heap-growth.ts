import { setFlagsFromString } from 'node:v8';

/**
 * How far the old generation may grow past what a full collection left live before the next one
 * starts, in percent, while the open-run cache turns over. Left to itself, V8 picks that factor
 * from its estimate of marking speed against allocation speed, up to 4 whenever the heap limit is
 * 2 GiB or more (every machine with 8 GiB of memory). A burst of run creations is where that
 * hurts: each run created pushes an open run out of the cache, so what every run allocated
 * outlives the young generation and dies in the old one, and V8 picked 4 and kept some 50 MiB of
 * that garbage for 6 to 8 s, a third of the bridge's RSS (docs/performance.md, "Peak RSS while
 * creating"). Bounded all the time, the extra full collections cost ingest 2-5%, which makes no
 * such garbage: so the bound holds only while the cache turns over.
 */
export const HEAP_GROWING_PERCENT = 50;

/** Runs pushed out of the open-run cache within a second that make it count as turning over. */
export const TURNOVER_PER_SECOND = 32;

const FLAG = /^--heap[-_]growing[-_]percent(=|$)/;

/** V8's flag: 0 is V8's own choice; the flag is read at every full collection. */
export function setHeapGrowingPercent(percent: number): void {
  setFlagsFromString(`--heap-growing-percent=${percent}`);
}

/**
 * Counts the runs leaving the open-run cache and bounds the heap's growth from the second in which
 * TURNOVER_PER_SECOND of them left until a second with fewer. Timers are unreferenced: they never
 * hold a stopping bridge open.
 */
export class HeapGrowthGovernor {
  private windowStart = Number.NEGATIVE_INFINITY;
  private inWindow = 0;
  private sinceCheck = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly setPercent: (percent: number) => void = setHeapGrowingPercent,
    private readonly now: () => number = () => performance.now(),
  ) {}

  get bounded(): boolean {
    return this.timer !== null;
  }

  /** One run left the open-run cache to make room. */
  readonly noteEviction = (): void => {
    this.sinceCheck++;
    if (this.timer !== null) return;
    const t = this.now();
    if (t - this.windowStart >= 1000) {
      this.windowStart = t;
      this.inWindow = 0;
    }
    if (++this.inWindow < TURNOVER_PER_SECOND) return;
    this.setPercent(HEAP_GROWING_PERCENT);
    this.sinceCheck = 0;
    this.arm();
  };

  private arm(): void {
    this.timer = setTimeout(this.check, 1000);
    this.timer.unref();
  }

  private readonly check = (): void => {
    const turning = this.sinceCheck >= TURNOVER_PER_SECOND;
    this.sinceCheck = 0;
    if (turning) {
      this.arm();
      return;
    }
    this.timer = null;
    this.setPercent(0);
  };
}

/**
 * The governor for this process, or null when its command line sets the flag itself
 * (`node --heap-growing-percent=N main.cjs bridge`), which then stands.
 */
export function heapGrowthGovernor(
  execArgv: readonly string[] = process.execArgv,
): HeapGrowthGovernor | null {
  return execArgv.some((arg) => FLAG.test(arg)) ? null : new HeapGrowthGovernor();
}
