/**
 * `npm run bench:store`: the PostgreSQL run store beside the file store, in one run (issue 32
 * item 9). Every bridge is a `harness bridge` child process; the database is a throwaway local
 * cluster (test/helpers/pg-cluster.ts: a Unix socket, fsync and synchronous_commit on).
 *
 *   (a) closed-loop req/s with events spread over 16 runs: file store vs PostgreSQL store
 *   (b) closed-loop req/s with every event on one run: the same
 *   (the two bridges alternate in BENCH_SLICES slices, so both see the same machine)
 *   (c) two bridges on one database, each with its own 16 runs, loaded together: their sum vs (a)
 *   (d) 100 sequential events into one PostgreSQL run, at its start and once it holds ~BENCH_FILL_TO
 *       events, each paired with events 1-100 of a fresh control run: the append cost must stay flat
 * Target: PostgreSQL at least 0.5x the file store in (a) and (b); (d), control-normalized, within 1.2x.
 *
 * Env knobs: BENCH_SECONDS (measured time per store and phase, default 8), BENCH_SLICES (default 4),
 * BENCH_WARMUP_SECONDS (default 2), BENCH_FILL_TO (default 100000).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPgCluster } from '../test/helpers/pg-cluster.js';
import { bridgeEnv, type Child, HARNESS_CLI, startChild } from './children.js';
import {
  CONNECTIONS,
  closedLoop,
  eventBody,
  FILL_TO,
  fill,
  type LoadResult,
  median,
  SECONDS,
  SLICE_WARMUP_MS,
  SLICES,
  sequentialPaired,
  type Target,
  WARMUP,
} from './load.js';
import { fmt, log, printTargets, type TargetRow } from './report.js';

async function main(): Promise<void> {
  const cluster = await startPgCluster();
  if (cluster === null) {
    log("bench:store needs PostgreSQL (initdb): install Debian's postgresql");
    process.exitCode = 2;
    return;
  }
  const dirs: string[] = [];
  const children: Child[] = [];
  const bridge = async (database: boolean, shared?: NodeJS.ProcessEnv): Promise<[Child, Target]> => {
    const dir = await mkdtemp(join(tmpdir(), 'harness-bench-store-'));
    dirs.push(dir);
    const own = await bridgeEnv(dir);
    // A second bridge on the database shares the first one's keys, with a data directory of its own.
    const env: NodeJS.ProcessEnv = shared
      ? { ...shared, HARNESS_DATA_DIR: own['HARNESS_DATA_DIR'], HOME: own['HOME'] }
      : { ...own, ...(database ? { HARNESS_DATABASE_URL: cluster.url } : {}) };
    const child = await startChild([HARNESS_CLI, 'bridge'], env, 'bridge');
    children.push(child);
    const target = {
      origin: child.url,
      headers: {
        'content-type': 'application/json',
        'x-harness-bridge-token': env['HARNESS_BRIDGE_ACCESS_TOKEN']!,
      },
    };
    return [Object.assign(child, { env }), target];
  };
  try {
    const [, fileT] = await bridge(false);
    const [pgChild, pgT] = await bridge(true);
    log(
      `machine: ${availableParallelism()} cores (${cpus()[0]?.model ?? '?'}), node ${process.version}, ` +
        `load average ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')}; PostgreSQL cluster on a Unix socket`,
    );
    let failures = 0;
    const counted = <R extends { non2xx: number; errors: number }>(r: R): R => {
      failures += r.non2xx + r.errors;
      return r;
    };
    /** Closed-loop slices alternating between the two stores; req/s of each over SECONDS. */
    const paired = async (tag: string, path: (i: number) => string) => {
      const n = { file: 0, pg: 0 };
      const results = { file: [] as LoadResult[], pg: [] as LoadResult[] };
      for (let s = 0; s < SLICES; s++) {
        const warmupMs = s === 0 ? WARMUP * 1000 : SLICE_WARMUP_MS;
        for (const [store, target] of [
          ['file', fileT],
          ['pg', pgT],
        ] as const) {
          const next = () => ({
            path: path(n[store]),
            body: eventBody(`${tag}-${store}-${n[store]}`, n[store]++),
          });
          const r = await closedLoop(target, next, {
            connections: CONNECTIONS,
            warmupMs,
            durationMs: (SECONDS * 1000) / SLICES,
          });
          results[store].push(counted(r));
        }
      }
      const rps = (rs: LoadResult[]) => rs.reduce((a, r) => a + r.measured, 0) / SECONDS;
      const p50 = (rs: LoadResult[]) => median(rs.map((r) => r.p50));
      log(
        `(${tag}) file ${fmt(rps(results.file))} req/s (p50 ${fmt(p50(results.file), 2)} ms), ` +
          `PostgreSQL ${fmt(rps(results.pg))} req/s (p50 ${fmt(p50(results.pg), 2)} ms); per slice ` +
          results.pg
            .map((r, i) => (r.measured / Math.max(1, results.file[i]!.measured)).toFixed(2))
            .join(' '),
      );
      return { file: rps(results.file), pg: rps(results.pg) };
    };
    const a = await paired('a', (i) => `/runs/bench-a-${i % 16}/events`);
    const b = await paired('b', () => '/runs/bench-b/events');

    // (c) a second bridge on the same database, both loaded at once, each on runs of its own.
    const [, pg2T] = await bridge(true, (pgChild as Child & { env: NodeJS.ProcessEnv }).env);
    const both = await Promise.all(
      [pgT, pg2T].map((target, k) => {
        let i = 0;
        return closedLoop(
          target,
          () => ({ path: `/runs/bench-c${k}-${i % 16}/events`, body: eventBody(`c${k}-${i}`, i++) }),
          { connections: CONNECTIONS / 2, warmupMs: WARMUP * 1000, durationMs: SECONDS * 1000 },
        );
      }),
    );
    const cSum = both.reduce((s, r) => s + counted(r).rps, 0);
    log(`(c) two bridges on one database: ${both.map((r) => fmt(r.rps)).join(' + ')} = ${fmt(cSum)} req/s`);

    // (d) the append cost at the start of a run and once it holds ~FILL_TO events.
    const runD = (offset: number) => (i: number) => ({
      path: '/runs/bench-d/events',
      body: eventBody(`d-${offset + i}`, offset + i),
    });
    // Each measured window is paired, request by request, with events 1-100 of a fresh control run:
    // sequential latency is mostly commit (fsync) latency, which other work on the machine moves.
    const control = (name: string) => (i: number) => ({
      path: `/runs/${name}/events`,
      body: eventBody(`${name}-${i}`, i),
    });
    const dHead = counted(await sequentialPaired(pgT, runD(0), control('bench-ctl-1'), 100));
    const filled = counted(await fill(pgT, runD(100), Math.max(0, FILL_TO - 200), CONNECTIONS));
    log(
      `(d) filled ${filled.ok} events in ${fmt(filled.ms / 1000, 1)} s (${fmt(filled.ok / (filled.ms / 1000))} req/s)`,
    );
    const dTail = counted(await sequentialPaired(pgT, runD(FILL_TO - 100), control('bench-ctl-2'), 100));
    const first = median(dHead.a);
    const last = median(dTail.a);
    const ctl1 = median(dHead.b);
    const ctl2 = median(dTail.b);
    log(
      `(d) median of 100 sequential: events 1-100 ${fmt(first, 3)} ms (control ${fmt(ctl1, 3)}), ` +
        `${FILL_TO - 99}-${FILL_TO} ${fmt(last, 3)} ms (control ${fmt(ctl2, 3)})`,
    );
    const normD = last / ctl2 / (first / ctl1);

    const rows: TargetRow[] = [
      ['(a) req/s, 16 runs', fmt(a.pg), fmt(a.file), a.pg / a.file, '>= 0.50', a.pg / a.file >= 0.5],
      ['(b) req/s, 1 run', fmt(b.pg), fmt(b.file), b.pg / b.file, '>= 0.50', b.pg / b.file >= 0.5],
      ['(c) req/s, two bridges vs one (a)', fmt(cSum), fmt(a.pg), cSum / a.pg, 'report', true],
      [`(d) median ms, ~${FILL_TO} vs first 100`, fmt(last, 3), fmt(first, 3), last / first, 'report', true],
      [
        '(d) same, each / its paired control',
        fmt(last / ctl2, 3),
        fmt(first / ctl1, 3),
        normD,
        '<= 1.20',
        normD <= 1.2,
      ],
      ['non-2xx + errors', String(failures), '-', NaN, '== 0', failures === 0],
    ];
    const met = printTargets('PostgreSQL', rows);
    if (!met) process.exitCode = 1;
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await cluster.stop();
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  }
}

await main();
