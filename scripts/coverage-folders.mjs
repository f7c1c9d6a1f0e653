// Prints line and branch coverage per src/ folder from c8's json-summary
// (coverage/coverage-summary.json), as docs/development.md quotes it: `npm run coverage` runs it.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

const summary = JSON.parse(readFileSync('coverage/coverage-summary.json', 'utf8'));
const folders = new Map();
for (const [file, s] of Object.entries(summary)) {
  if (file === 'total') continue;
  const parts = relative(process.cwd(), file).split('/');
  const folder = parts.length > 2 ? `${parts[0]}/${parts[1]}` : parts[0];
  const f = folders.get(folder) ?? { files: 0, lines: [0, 0], branches: [0, 0] };
  f.files += 1;
  f.lines[0] += s.lines.covered;
  f.lines[1] += s.lines.total;
  f.branches[0] += s.branches.covered;
  f.branches[1] += s.branches.total;
  folders.set(folder, f);
}
const pct = ([covered, total]) => (total === 0 ? '-' : `${((100 * covered) / total).toFixed(1)}%`);
const rows = [...folders].sort(([a], [b]) => a.localeCompare(b));
console.log('| folder | files | lines | branches |\n| --- | --- | --- | --- |');
for (const [folder, f] of rows) {
  console.log(
    `| ${folder} | ${f.files} | ${pct(f.lines)} (${f.lines[0]}/${f.lines[1]}) | ${pct(f.branches)} (${f.branches[0]}/${f.branches[1]}) |`,
  );
}
const t = summary.total;
console.log(
  `| all | ${rows.reduce((n, [, f]) => n + f.files, 0)} | ${pct([t.lines.covered, t.lines.total])} (${t.lines.covered}/${t.lines.total}) | ${pct([t.branches.covered, t.branches.total])} (${t.branches.covered}/${t.branches.total}) |`,
);
