import { lstat } from 'node:fs/promises';

/**
 * Debounces the watcher's reports per named path: a path is settled once no report came for
 * `settleMs` and two looks at it (lstat: size, mtime, inode), `settleMs` apart, agree. Every report
 * restarts the wait, so a burst of writes, or an editor's write-to-temp-then-rename, ends in one
 * settled change. State is one entry per named path with a report in flight: bounded by the
 * adapter's paths, whatever the watcher reports.
 */
interface Wait {
  timer: NodeJS.Timeout;
  /** What the previous look saw (null: no look yet). */
  look: string | null;
}

export class Settler {
  private readonly waiting = new Map<string, Wait>();
  private closed = false;

  constructor(
    private readonly settleMs: number,
    private readonly absolute: (rel: string) => string,
    private readonly settled: (rel: string) => void,
  ) {}

  /** Something happened at `rel`: (re)start its wait. */
  report(rel: string): void {
    if (this.closed) return;
    const entry = this.waiting.get(rel);
    if (entry !== undefined) clearTimeout(entry.timer);
    this.arm(rel, null);
  }

  /** The paths still waiting to settle. */
  get pending(): string[] {
    return [...this.waiting.keys()];
  }

  /** Stops every wait; answers the paths that had one (a change seen but not settled yet). */
  close(): string[] {
    this.closed = true;
    const left = this.pending;
    for (const { timer } of this.waiting.values()) clearTimeout(timer);
    this.waiting.clear();
    return left;
  }

  private arm(rel: string, look: string | null): void {
    const wait: Wait = { timer: setTimeout(() => void this.look(rel, wait), this.settleMs), look };
    this.waiting.set(rel, wait);
  }

  private async look(rel: string, wait: Wait): Promise<void> {
    const now = await lstat(this.absolute(rel)).then(
      (s) => `${s.size}:${s.mtimeMs}:${s.ino}`,
      () => 'absent',
    );
    // Reported again (or closed) while the lstat ran: that newer wait decides.
    if (this.closed || this.waiting.get(rel) !== wait) return;
    if (now !== wait.look) {
      this.arm(rel, now);
      return;
    }
    this.waiting.delete(rel);
    this.settled(rel);
  }
}
