/** `[#####.....] 512/1000 files`: the bar a long offline check draws on a terminal. */
export function progressLine(done: number, total: number, unit: string, width = 20): string {
  const ratio = total === 0 ? 1 : Math.min(1, Math.max(0, done / total));
  const filled = Math.floor(ratio * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} ${unit}`;
}

const SHOW_AFTER_MS = 300;
const REDRAW_MS = 100;

/**
 * A progress bar on one stderr line, drawn only when stderr is a terminal and only once a phase
 * has lasted SHOW_AFTER_MS (a quick check prints nothing); `clear` erases it before results print.
 */
export class Progress {
  private total = 0;
  private unit = '';
  private startedAt = 0;
  private drawnAt = 0;
  private drawn = false;

  constructor(
    private readonly stream: NodeJS.WriteStream = process.stderr,
    private readonly enabled: boolean = stream.isTTY === true,
  ) {}

  phase(total: number, unit: string): void {
    this.total = total;
    this.unit = unit;
    this.startedAt = Date.now();
  }

  update(done: number): void {
    if (!this.enabled) return;
    const now = Date.now();
    if (now - this.startedAt < SHOW_AFTER_MS || (now - this.drawnAt < REDRAW_MS && done < this.total)) return;
    this.drawnAt = now;
    this.drawn = true;
    this.stream.write(`\r${progressLine(done, this.total, this.unit)}\x1b[K`);
  }

  clear(): void {
    if (this.drawn) this.stream.write('\r\x1b[K');
    this.drawn = false;
  }
}
