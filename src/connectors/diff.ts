/**
 * A unified diff of two texts by lines, for `harness connect --dry-run`: the common head and tail
 * are set aside, the middle is compared by longest common subsequence (our edits are small), and
 * each change is shown with three lines of context.
 */
const CONTEXT = 3;
const LCS_MAX_CELLS = 4_000_000;

type Op = [' ' | '-' | '+', string];

export function unifiedDiff(label: string, before: string, after: string): string {
  const a = lines(before);
  const b = lines(after);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (
    tail < a.length - head &&
    tail < b.length - head &&
    a[a.length - 1 - tail] === b[b.length - 1 - tail]
  )
    tail++;
  const ops: Op[] = [
    ...a.slice(0, head).map((l): Op => [' ', l]),
    ...middle(a.slice(head, a.length - tail), b.slice(head, b.length - tail)),
    ...a.slice(a.length - tail).map((l): Op => [' ', l]),
  ];
  const out = [`--- ${label}`, `+++ ${label} (after)`];
  let i = 0;
  while (i < ops.length) {
    const change = ops.findIndex((op, k) => k >= i && op[0] !== ' ');
    if (change < 0) break;
    let stop = change;
    // A hunk runs on while the next change is close enough for the contexts to meet.
    for (let k = change; k < ops.length && k - stop <= 2 * CONTEXT; k++) if (ops[k]![0] !== ' ') stop = k;
    const from = Math.max(change - CONTEXT, i);
    const to = Math.min(stop + CONTEXT + 1, ops.length);
    const hunk = ops.slice(from, to);
    const lineA = ops.slice(0, from).filter((o) => o[0] !== '+').length + 1;
    const lineB = ops.slice(0, from).filter((o) => o[0] !== '-').length + 1;
    const countA = hunk.filter((o) => o[0] !== '+').length;
    const countB = hunk.filter((o) => o[0] !== '-').length;
    out.push(`@@ -${lineA},${countA} +${lineB},${countB} @@`, ...hunk.map(([s, l]) => s + l));
    i = to;
  }
  return `${out.join('\n')}\n`;
}

const lines = (text: string) => (text === '' ? [] : text.replace(/\n$/, '').split('\n'));

function middle(a: string[], b: string[]): Op[] {
  if (a.length * b.length > LCS_MAX_CELLS)
    return [...a.map((l): Op => ['-', l]), ...b.map((l): Op => ['+', l])];
  // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
  const lcs = Array.from({ length: a.length + 1 }, () => new Uint32Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--)
      lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  const ops: Op[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      ops.push([' ', a[i++]!]);
      j++;
    } else if (j < b.length && (i === a.length || lcs[i]![j + 1]! >= lcs[i + 1]![j]!))
      ops.push(['+', b[j++]!]);
    else ops.push(['-', a[i++]!]);
  }
  return ops;
}
