/**
 * `npm run bench:ingest`: the bridge's event ingest against a bare Fastify echo route, in one run.
 * Both servers are child processes (never sharing the load generator's event loop); every figure
 * comes from real HTTP requests over loopback made with undici (50 connections, pipelining 1).
 *
 *   (a) closed-loop req/s with events spread over 16 runs, vs the echo route
 *   (b) closed-loop req/s with every event on one run, vs the echo route
 *   (the echo and the bridge alternate in BENCH_SLICES slices, so both see the same machine)
 *   (c) 2000 sequential events into one run: median latency of the last 100 vs the first 100
 *   (d) that run filled to ~100000 events, then 100 sequential: median vs the first 100 of (c)
 *   plus every non-2xx answer from the bridge, and its RSS after (d).
 * For (c) and (d) each measured window is also paired, request by request, with events 1-100 of
 * a fresh control run, and a control-normalized ratio is printed beside the raw one: sequential
 * latency is mostly fdatasync latency, which other work on a shared machine moves during a run.
 *
 * Env knobs: BENCH_SECONDS (measured time per server and phase, default 8), BENCH_SLICES (default
 * 4), BENCH_WARMUP_SECONDS (default 2), BENCH_FILL_TO (default 100000), BENCH_CPU_PROF=<dir> (run
 * the bridge under --cpu-prof).
 */
import { mkdtemp, open, rm } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { bridgeEnv, cpuSeconds, HARNESS_CLI, rssMiB, startChild } from './children.js';
import {
  CONNECTIONS,
  closedLoop,
  eventBody,
  FILL_TO,
  fill,
  median,
  type Request,
  SECONDS,
  SLICE_WARMUP_MS,
  SLICES,
  sequential,
  sequentialPaired,
  type Target,
  WARMUP,
} from './load.js';
import { fmt, log, printTargets, type TargetRow } from './report.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = resolve(here, '..', '..');

/** Latency of a 700-byte append + fdatasync on the bridge's filesystem (what every ack waits for). */
async function syncLatency(dir: string): Promise<{ p50: number; p90: number }> {
  const path = join(dir, 'sync-probe');
  const h = await open(path, 'a');
  const buf = Buffer.alloc(700, 0x78);
  const lat: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t0 = performance.now();
    await h.write(buf);
    await h.datasync();
    lat.push(performance.now() - t0);
  }
  await h.close();
  await rm(path);
  lat.sort((a, b) => a - b);
  return { p50: lat[100]!, p90: lat[180]! };
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'harness-bench-'));
  const env = await bridgeEnv(dir);
  const prof = process.env['BENCH_CPU_PROF'];
  const bridgeArgs = [
    ...(prof ? ['--cpu-prof', '--cpu-prof-dir', resolve(prof)] : []),
    HARNESS_CLI,
    'bridge',
  ];
  const echo = await startChild(
    [join(root, 'dist', 'bench', 'echo-server.js')],
    { PATH: env['PATH'] },
    'echo',
  );
  const bridge = await startChild(bridgeArgs, env, 'bridge');
  log(
    `machine: ${availableParallelism()} cores (${cpus()[0]?.model ?? '?'}), node ${process.version}, ` +
      `load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
  );
  const disk0 = await syncLatency(dir);
  log(`disk: 700-byte append + fdatasync p50 ${fmt(disk0.p50, 3)} ms, p90 ${fmt(disk0.p90, 3)} ms`);
  log(`echo ${echo.url} (pid ${echo.pid}); bridge ${bridge.url} (pid ${bridge.pid}); data ${dir}`);
  const json = { 'content-type': 'application/json' };
  const echoTarget: Target = { origin: echo.url, headers: json };
  const bridgeTarget: Target = {
    origin: bridge.url,
    headers: { ...json, 'x-harness-bridge-token': env['HARNESS_BRIDGE_ACCESS_TOKEN']! },
  };
  let bridgeNon2xx = 0;
  let bridgeErrors = 0;
  const count = (r: { non2xx: number; errors: number }) => {
    bridgeNon2xx += r.non2xx;
    bridgeErrors += r.errors;
  };
  /**
   * One closed-loop slice against one server, also sampling that server's CPU time over the
   * measured window: CPU per request does not depend on what else the machine is running, req/s does.
   */
  const slice = async (pid: number, target: Target, next: () => Request, warmupMs: number) => {
    const durationMs = (SECONDS * 1000) / SLICES;
    let cpu0 = 0;
    let cpu1 = 0;
    const t0 = setTimeout(() => {
      cpu0 = cpuSeconds(pid);
    }, warmupMs);
    const t1 = setTimeout(() => {
      cpu1 = cpuSeconds(pid);
    }, warmupMs + durationMs);
    const r = await closedLoop(target, next, { connections: CONNECTIONS, warmupMs, durationMs });
    clearTimeout(t0);
    clearTimeout(t1);
    // The load may end a moment before the timer: the server is idle by now, so read it here.
    if (cpu1 === 0) cpu1 = cpuSeconds(pid);
    return { ...r, cpuSeconds: cpu1 - cpu0 };
  };
  type Slice = Awaited<ReturnType<typeof slice>>;
  /** The slices of one server, as one window of SECONDS. */
  const combined = (name: string, slices: Slice[]) => {
    const measured = slices.reduce((n, r) => n + r.measured, 0);
    const r = {
      rps: measured / SECONDS,
      measured,
      non2xx: slices.reduce((n, x) => n + x.non2xx, 0),
      errors: slices.reduce((n, x) => n + x.errors, 0),
      p50: median(slices.map((x) => x.p50)),
      p99: Math.max(...slices.map((x) => x.p99)),
      cpuUs: (slices.reduce((n, x) => n + x.cpuSeconds, 0) * 1e6) / Math.max(1, measured),
    };
    log(
      `${name}: ${fmt(r.rps)} req/s (${r.measured} in ${SECONDS} s), slice p50 median ${fmt(r.p50, 2)} ms, ` +
        `p99 ${fmt(r.p99, 2)} ms, server CPU ${fmt(r.cpuUs)} us/req, non-2xx ${r.non2xx}, errors ${r.errors}`,
    );
    return r;
  };
  /**
   * A throughput phase: the echo and the bridge in alternating slices (echo, bridge, echo, ...),
   * SECONDS each in all, so both are measured across the same stretch of time. On a shared VM the
   * machine's speed moves by up to two times within a minute; one window each, one after the
   * other, would compare two different machines. The first slice of each warms up for
   * BENCH_WARMUP_SECONDS, the others for SLICE_WARMUP_MS (a new connection pool each).
   */
  const paired = async (tag: string, name: string, path: (i: number) => string) => {
    let e = 0;
    let b = 0;
    const echoNext = () => ({ path: '/echo', body: eventBody(`echo-${tag}-${e}`, e++) });
    const bridgeNext = () => ({ path: path(b), body: eventBody(`${tag}-${b}`, b++) });
    const echoSlices: Slice[] = [];
    const bridgeSlices: Slice[] = [];
    for (let i = 0; i < SLICES; i++) {
      const warmupMs = i === 0 ? WARMUP * 1000 : SLICE_WARMUP_MS;
      echoSlices.push(await slice(echo.pid, echoTarget, echoNext, warmupMs));
      bridgeSlices.push(await slice(bridge.pid, bridgeTarget, bridgeNext, warmupMs));
    }
    const perSlice = echoSlices.map((x, i) =>
      (bridgeSlices[i]!.measured / Math.max(1, x.measured)).toFixed(2),
    );
    const echoR = combined(`echo (${tag})`, echoSlices);
    const bridgeR = combined(`bridge (${tag}) ${name}`, bridgeSlices);
    log(`(${tag}) ratio per slice: ${perSlice.join(' ')}`);
    count(bridgeR);
    return { echo: echoR, bridge: bridgeR };
  };

  try {
    const { echo: echoA, bridge: bridgeA } = await paired(
      'a',
      '16 runs',
      (i) => `/runs/bench-a-${i % 16}/events`,
    );
    const { echo: echoB, bridge: bridgeB } = await paired('b', '1 run', () => '/runs/bench-b/events');

    const runC =
      (offset: number) =>
      (i: number): Request => ({
        path: '/runs/bench-c/events',
        body: eventBody(`c-${offset + i}`, offset + i),
      });
    // Let the bridge settle after (b) (its last batches, snapshots, GC) and warm the sequential
    // path on another run, so the first 100 of (c) measure steady state, not the tail of (b).
    await new Promise((r) => setTimeout(r, 1000));
    count(
      await sequential(
        bridgeTarget,
        (i) => ({ path: '/runs/bench-warm/events', body: eventBody(`w-${i}`, i) }),
        300,
      ),
    );
    // (c): events 1-100 and 1901-2000 are each paired with events 1-100 of a fresh control run,
    // sent alternately, so a control-normalized ratio can be given beside the raw one.
    const control =
      (name: string) =>
      (i: number): Request => ({
        path: `/runs/${name}/events`,
        body: eventBody(`${name}-${i}`, i),
      });
    const cHead = await sequentialPaired(bridgeTarget, runC(0), control('bench-ctl-1'), 100);
    const cMid = await sequential(bridgeTarget, runC(100), 1800);
    const cTail = await sequentialPaired(bridgeTarget, runC(1900), control('bench-ctl-2'), 100);
    for (const r of [cHead, cMid, cTail]) count(r);
    const cFirst = median(cHead.a);
    const cLast = median(cTail.a);
    const ctl1 = median(cHead.b);
    const ctl2 = median(cTail.b);
    log(
      `(c) 2000 sequential: first 100 median ${fmt(cFirst, 3)} ms (control ${fmt(ctl1, 3)}), ` +
        `last 100 median ${fmt(cLast, 3)} ms (control ${fmt(ctl2, 3)})`,
    );

    const fillCount = Math.max(0, FILL_TO - 100 - 2000);
    const filled = await fill(bridgeTarget, runC(2000), fillCount, CONNECTIONS);
    count(filled);
    log(
      `(d) filled ${filled.ok} events in ${fmt(filled.ms / 1000, 1)} s ` +
        `(${fmt(filled.ok / (filled.ms / 1000))} req/s), non-2xx ${filled.non2xx}, errors ${filled.errors}`,
    );
    const d = await sequentialPaired(bridgeTarget, runC(2000 + fillCount), control('bench-ctl-3'), 100);
    count(d);
    const dMedian = median(d.a);
    const ctl3 = median(d.b);
    log(
      `(d) events ${2000 + fillCount + 1}-${2000 + fillCount + 100}: median ${fmt(dMedian, 3)} ms ` +
        `(control ${fmt(ctl3, 3)})`,
    );
    const mem = await rssMiB(bridge.pid);
    log(`bridge RSS after (d): ${fmt(mem.rss, 1)} MiB (peak ${fmt(mem.peak, 1)} MiB)`);

    const disk1 = await syncLatency(dir);
    log(`disk after: append + fdatasync p50 ${fmt(disk1.p50, 3)} ms, p90 ${fmt(disk1.p90, 3)} ms`);

    const rows: TargetRow[] = [];
    const ratioA = bridgeA.rps / echoA.rps;
    const ratioB = bridgeB.rps / echoB.rps;
    rows.push(['(a) req/s, 16 runs', fmt(bridgeA.rps), fmt(echoA.rps), ratioA, '>= 0.50', ratioA >= 0.5]);
    rows.push(['(b) req/s, 1 run', fmt(bridgeB.rps), fmt(echoB.rps), ratioB, '>= 0.35', ratioB >= 0.35]);
    const ratioC = cLast / cFirst;
    rows.push([
      '(c) median ms, last/first 100 of 2000',
      fmt(cLast, 3),
      fmt(cFirst, 3),
      ratioC,
      '<= 1.20',
      ratioC <= 1.2,
    ]);
    const ratioD = dMedian / cFirst;
    rows.push([
      `(d) median ms, ~${FILL_TO} vs first 100`,
      fmt(dMedian, 3),
      fmt(cFirst, 3),
      ratioD,
      '<= 1.20',
      ratioD <= 1.2,
    ]);
    // Sequential latency is mostly fdatasync latency, which other load on a shared machine moves
    // during the run; dividing by a fresh run's events 1-100 sent alternately cancels that.
    const normC = cLast / ctl2 / (cFirst / ctl1);
    const normD = dMedian / ctl3 / (cFirst / ctl1);
    rows.push([
      '(c) same, each / its paired control',
      fmt(cLast / ctl2, 3),
      fmt(cFirst / ctl1, 3),
      normC,
      '<= 1.20',
      normC <= 1.2,
    ]);
    rows.push([
      '(d) same, each / its paired control',
      fmt(dMedian / ctl3, 3),
      fmt(cFirst / ctl1, 3),
      normD,
      '<= 1.20',
      normD <= 1.2,
    ]);
    const failures = bridgeNon2xx + bridgeErrors;
    rows.push(['bridge non-2xx + errors', String(failures), '-', NaN, '== 0', failures === 0]);
    rows.push(['bridge RSS after (d), MiB', fmt(mem.rss, 1), '-', NaN, '< 250', mem.rss < 250]);

    const met = printTargets('bridge', rows);
    log(
      `server CPU per request: echo ${fmt(echoA.cpuUs)} / ${fmt(echoB.cpuUs)} us, bridge (a) ` +
        `${fmt(bridgeA.cpuUs)} us, (b) ${fmt(bridgeB.cpuUs)} us; CPU-bound ratio (a) ` +
        `${(echoA.cpuUs / bridgeA.cpuUs).toFixed(2)}, (b) ${(echoB.cpuUs / bridgeB.cpuUs).toFixed(2)}`,
    );
    if (!met) process.exitCode = 1;
  } finally {
    await Promise.all([echo.stop(), bridge.stop()]);
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
