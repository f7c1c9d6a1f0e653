/** What the benchmarks share: their knobs, their output, and the table of figures against targets. */

/** A positive number from the environment variable `name`, else `fallback`. */
export const num = (name: string, fallback: number): number => {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
};

export const log = (s: string): void => {
  process.stdout.write(`${s}\n`);
};

export const fmt = (n: number, d = 0): string => (Number.isFinite(n) ? n.toFixed(d) : 'n/a');

/** One figure: its name, value, baseline, their ratio (NaN: none), the target ('report': none), met. */
export type TargetRow = [string, string, string, number, string, boolean];

/** Prints the figures as a table under `valueHeader`; true when every target is met. */
export function printTargets(valueHeader: string, rows: TargetRow[]): boolean {
  const header = ['figure', valueHeader, 'baseline', 'ratio', 'target', 'result'];
  const table = rows.map(([name, value, base, ratio, target, pass]) => [
    name,
    value,
    base,
    Number.isNaN(ratio) ? '-' : ratio.toFixed(2),
    target,
    target === 'report' ? '-' : pass ? 'PASS' : 'FAIL',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  log('');
  log(line(header));
  log(line(widths.map((w) => '-'.repeat(w))));
  for (const r of table) log(line(r));
  return rows.every((r) => r[5]);
}
