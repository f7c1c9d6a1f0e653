import { performance } from 'node:perf_hooks';
import {
  changesSince,
  commitExists,
  headCommit,
  showCommitted,
  uncomparedPaths,
  workingTreeStatus,
} from '../src/validators/git.js';

/**
 * The wall time of each git query the finish line and the completed-run cache key make, in the
 * repository given (default: the working directory), one at a time: `node dist/bench/git-queries.js
 * [repo] [rounds]`. Prints the median and the 90th percentile per query, in milliseconds.
 */
const repo = process.argv[2] ?? process.cwd();
const rounds = Number(process.argv[3] ?? 40);
const head = await headCommit(repo);
if (head === null) throw new Error(`${repo} is not a repository with a commit`);

const queries: [string, () => Promise<unknown>][] = [
  ['headCommit (rev-parse)', () => headCommit(repo)],
  ['commitExists (cat-file -e)', () => commitExists(repo, head)],
  ['showCommitted (cat-file blob)', () => showCommitted(repo, 'package.json')],
  ['workingTreeStatus (index copy + status)', () => workingTreeStatus(repo, null)],
  ['uncomparedPaths (3 x ls-files)', () => uncomparedPaths(repo, null)],
  ['changesSince (index copy + diff, ls-files)', () => changesSince(repo, head, null)],
];

const ms = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!;
for (const [name, query] of queries) {
  await query();
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const start = performance.now();
    await query();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  console.log(
    `${name.padEnd(40)} median ${ms(times, 0.5).toFixed(1)} ms  p90 ${ms(times, 0.9).toFixed(1)} ms`,
  );
}
