/**
 * `npm run bench:runs`: a bridge holding many runs. For BENCH_RUNS runs (default 100,000) and, in
 * the same run of the benchmark, 1,000 runs as the baseline, each on a fresh data directory:
 *
 *   1. create the runs, one event each (its first, which creates the run), from 16 concurrent
 *      posters: the creation rate;
 *   2. page through all of them as the UI does (`GET /runs`, 50 a page): page latency, warm;
 *   3. stop the bridge (SIGTERM) and start it again: the time from spawn to listening;
 *   4. page through all of them again, then poll the first page for BENCH_POLL_SECONDS (30):
 *      page latency after the restart;
 *   5. the bridge's peak RSS (VmHWM) in each life, and its RSS once polling ends (settled).
 *
 * Targets (issue 35): startup <= 3 s, page p99 <= 10 ms after restart, peak RSS < 300 MiB, and
 * the large figures within 1.5x of the baseline's.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { bridgeEnv, type Child, rssMiB, startChild } from './children.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const CLI = join(resolve(here, '..', '..'), 'dist', 'src', 'cli', 'main.cjs');
const RUNS = Math.max(1000, Number(process.env['BENCH_RUNS']) || 100_000);
const BASELINE = 1000;
const POSTERS = 16;
const PAGE = 50;
const POLL_MS = (Number(process.env['BENCH_POLL_SECONDS']) || 30) * 1000;

const agent = new Agent({ keepAlive: true, maxSockets: POSTERS });

function call(
  url: string,
  token: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  return new Promise((done, fail) => {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const headers: Record<string, string> = { 'x-harness-bridge-token': token };
    if (payload) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(payload.length);
    }
    const req = request(new URL(path, url), { method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => done({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
      res.on('error', fail);
    });
    req.on('error', fail);
    req.end(payload);
  });
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
};

interface Figures {
  runs: number;
  createPerSec: number;
  warmMedian: number;
  warmP99: number;
  startupMs: number;
  restartMedian: number;
  restartP99: number;
  creationPeakRss: number;
  peakRss: number;
  settledRss: number;
}

/** Every page of the listing, in order; the latency of each. */
async function pageThrough(url: string, token: string, expect: number): Promise<number[]> {
  const times: number[] = [];
  let seen = 0;
  for (let cursor = 0; cursor < expect; cursor += PAGE) {
    const t0 = performance.now();
    const r = await call(url, token, 'GET', `/runs?limit=${PAGE}&cursor=${cursor}`);
    times.push(performance.now() - t0);
    if (r.status !== 200) throw new Error(`GET /runs answered ${r.status}: ${r.text.slice(0, 300)}`);
    seen += (JSON.parse(r.text) as { runs: unknown[] }).runs.length;
  }
  if (seen !== expect) throw new Error(`the listing showed ${seen} runs, not ${expect}`);
  return times;
}

async function measure(runs: number): Promise<Figures> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-runs-'));
  let bridge: Child | null = null;
  try {
    const env = await bridgeEnv(dir);
    const token = String(env['HARNESS_BRIDGE_ACCESS_TOKEN']);
    const root = join(dir, 'repo');
    bridge = await startChild([CLI, 'bridge'], env, 'bridge');
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: POSTERS }, async () => {
        for (let i = next++; i < runs; i = next++) {
          const r = await call(bridge!.url, token, 'POST', `/runs/bench-${i}/events`, {
            id: `e-${i}`,
            type: 'node.entered',
            nodeId: 'intake',
            actor: 'runtime-a',
            status: 'ok',
            message: 'start',
            runMode: 'live',
            eventSource: 'bridge',
            ts: new Date().toISOString(),
            artifactRoot: root,
          });
          if (r.status !== 201) throw new Error(`run ${i}: ${r.status} ${r.text.slice(0, 300)}`);
        }
      }),
    );
    const createPerSec = runs / ((performance.now() - t0) / 1000);
    const warm = await pageThrough(bridge.url, token, runs);
    // VmHWM is the process's own high-water mark: read last, it covers the whole life so far.
    const creationPeak = (await rssMiB(bridge.pid)).peak;
    await bridge.stop();
    bridge = null;
    const s0 = performance.now();
    bridge = await startChild([CLI, 'bridge'], env, 'bridge');
    const startupMs = performance.now() - s0;
    const after = await pageThrough(bridge.url, token, runs);
    const until = performance.now() + POLL_MS;
    while (performance.now() < until) {
      const p0 = performance.now();
      const r = await call(bridge.url, token, 'GET', `/runs?limit=${PAGE}`);
      if (r.status !== 200) throw new Error(`GET /runs answered ${r.status}`);
      after.push(performance.now() - p0);
    }
    const last = await rssMiB(bridge.pid);
    return {
      runs,
      createPerSec,
      warmMedian: quantile(warm, 0.5),
      warmP99: quantile(warm, 0.99),
      startupMs,
      restartMedian: quantile(after, 0.5),
      restartP99: quantile(after, 0.99),
      creationPeakRss: creationPeak,
      peakRss: last.peak,
      settledRss: last.rss,
    };
  } finally {
    await bridge?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const base = await measure(BASELINE);
  const big = await measure(RUNS);
  agent.destroy();
  const rows: [string, (f: Figures) => number, string, number | null, 'le' | 'lt'][] = [
    ['creation, runs/s', (f) => f.createPerSec, '', null, 'le'],
    ['startup, ms', (f) => f.startupMs, '<= 3000', 3000, 'le'],
    ['page median warm, ms', (f) => f.warmMedian, '', null, 'le'],
    ['page p99 warm, ms', (f) => f.warmP99, '', null, 'le'],
    ['page median after restart, ms', (f) => f.restartMedian, '', null, 'le'],
    ['page p99 after restart, ms', (f) => f.restartP99, '<= 10', 10, 'le'],
    ['peak RSS creating and listing, MiB', (f) => f.creationPeakRss, '< 300', 300, 'lt'],
    ['peak RSS after restart, MiB', (f) => f.peakRss, '< 300', 300, 'lt'],
    ['settled RSS, MiB', (f) => f.settledRss, '', null, 'lt'],
  ];
  const lines = [
    `bench:runs (node ${process.version}): ${BASELINE} runs beside ${RUNS}, ${POSTERS} posters, pages of ${PAGE}`,
    `${'figure'.padEnd(32)}${String(BASELINE).padStart(10)}${String(RUNS).padStart(10)}   ratio   target`,
  ];
  for (const [name, of, target, limit, cmp] of rows) {
    const a = of(base);
    const b = of(big);
    // Creation is a rate: the large figure is compared as how much slower it is.
    const ratio = name.startsWith('creation') ? a / b : b / a;
    const met = limit === null || (cmp === 'lt' ? b < limit : b <= limit);
    const pass = met && ratio <= 1.5;
    if (!pass) process.exitCode = 1;
    const verdict = `${target === '' ? '' : `${target} `}${ratio <= 1.5 ? '' : '(ratio > 1.5x) '}${pass ? 'PASS' : 'FAIL'}`;
    lines.push(
      `${name.padEnd(32)}${a.toFixed(1).padStart(10)}${b.toFixed(1).padStart(10)}   ${ratio.toFixed(2).padStart(5)}x  ${verdict}`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

await main();
