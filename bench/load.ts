import { performance } from 'node:perf_hooks';
import { Client, Pool } from 'undici';
import { num } from './report.js';

/**
 * The closed-loop knobs bench:ingest and bench:store share: measured seconds per server and phase
 * (BENCH_SECONDS), the first slice's warm-up (BENCH_WARMUP_SECONDS), slices per phase
 * (BENCH_SLICES), the events a run is filled to (BENCH_FILL_TO), the connections, and the warm-up
 * of every later slice (a new pool's connections, no JIT to warm).
 */
export const SECONDS = num('BENCH_SECONDS', 8);
export const WARMUP = num('BENCH_WARMUP_SECONDS', 2);
export const SLICES = Math.round(num('BENCH_SLICES', 4));
export const FILL_TO = num('BENCH_FILL_TO', 100_000);
export const CONNECTIONS = 50;
export const SLICE_WARMUP_MS = 500;

export interface Target {
  origin: string;
  headers: Record<string, string>;
}

export interface Request {
  path: string;
  body: string;
}

export interface LoadResult {
  /** 2xx answers per second inside the measured window. */
  rps: number;
  measured: number;
  non2xx: number;
  errors: number;
  p50: number;
  p99: number;
}

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

export function median(values: number[]): number {
  return quantile(
    [...values].sort((a, b) => a - b),
    0.5,
  );
}

/**
 * Closed-loop load: `connections` workers on a keep-alive pool (pipelining 1), each sending its
 * next request as soon as the previous answer is read. Requests completing during the warm-up are
 * sent but not counted; throughput is 2xx answers completed inside the measured window.
 */
export async function closedLoop(
  target: Target,
  next: (i: number) => Request,
  opts: { connections: number; warmupMs: number; durationMs: number },
): Promise<LoadResult> {
  const pool = new Pool(target.origin, { connections: opts.connections, pipelining: 1 });
  const start = performance.now();
  const measureFrom = start + opts.warmupMs;
  const end = measureFrom + opts.durationMs;
  let i = 0;
  let measured = 0;
  let non2xx = 0;
  let errors = 0;
  const latencies: number[] = [];
  const worker = async () => {
    for (;;) {
      const t0 = performance.now();
      if (t0 >= end) return;
      const req = next(i++);
      try {
        const res = await pool.request({
          method: 'POST',
          path: req.path,
          headers: target.headers,
          body: req.body,
        });
        await res.body.dump();
        const t1 = performance.now();
        const ok = res.statusCode >= 200 && res.statusCode < 300;
        if (!ok) non2xx++;
        if (t1 >= measureFrom && t1 < end) {
          if (ok) measured++;
          latencies.push(t1 - t0);
        }
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: opts.connections }, worker));
  await pool.close();
  latencies.sort((a, b) => a - b);
  return {
    rps: measured / (opts.durationMs / 1000),
    measured,
    non2xx,
    errors,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
  };
}

/** Sends `count` requests as fast as possible with `connections` in flight; counts failures. */
export async function fill(
  target: Target,
  next: (i: number) => Request,
  count: number,
  connections: number,
): Promise<{ ok: number; non2xx: number; errors: number; ms: number }> {
  const pool = new Pool(target.origin, { connections, pipelining: 1 });
  const start = performance.now();
  let i = 0;
  let ok = 0;
  let non2xx = 0;
  let errors = 0;
  const worker = async () => {
    while (i < count) {
      const req = next(i++);
      try {
        const res = await pool.request({
          method: 'POST',
          path: req.path,
          headers: target.headers,
          body: req.body,
        });
        await res.body.dump();
        if (res.statusCode >= 200 && res.statusCode < 300) ok++;
        else non2xx++;
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  await pool.close();
  return { ok, non2xx, errors, ms: performance.now() - start };
}

/** One request at a time on one keep-alive connection; the latency (ms) of each. */
export async function sequential(
  target: Target,
  next: (i: number) => Request,
  count: number,
): Promise<{ latencies: number[]; non2xx: number; errors: number }> {
  const client = new Client(target.origin, { pipelining: 1 });
  const out = { latencies: [] as number[], non2xx: 0, errors: 0 };
  for (let i = 0; i < count; i++) await timedPost(client, target, next(i), out.latencies, out);
  await client.close();
  return out;
}

/** One POST on `client`, its latency pushed to `into`; a non-2xx or a transport error is counted. */
async function timedPost(
  client: Client,
  target: Target,
  req: Request,
  into: number[],
  counts: { non2xx: number; errors: number },
): Promise<void> {
  const t0 = performance.now();
  try {
    const res = await client.request({
      method: 'POST',
      path: req.path,
      headers: target.headers,
      body: req.body,
    });
    await res.body.dump();
    into.push(performance.now() - t0);
    if (res.statusCode < 200 || res.statusCode >= 300) counts.non2xx++;
  } catch {
    counts.errors++;
  }
}

/**
 * `count` rounds of one request from `a` then one from `b`, each alone on its own connection:
 * both series see the same moment's disk and CPU, so their ratio cancels what the rest of the
 * machine is doing.
 */
export async function sequentialPaired(
  target: Target,
  a: (i: number) => Request,
  b: (i: number) => Request,
  count: number,
): Promise<{ a: number[]; b: number[]; non2xx: number; errors: number }> {
  const ca = new Client(target.origin, { pipelining: 1 });
  const cb = new Client(target.origin, { pipelining: 1 });
  const out = { a: [] as number[], b: [] as number[], non2xx: 0, errors: 0 };
  for (let i = 0; i < count; i++) {
    await timedPost(ca, target, a(i), out.a, out);
    await timedPost(cb, target, b(i), out.b, out);
  }
  await Promise.all([ca.close(), cb.close()]);
  return out;
}

const EVENT_BYTES = 400;
const NODES = ['intake', 'route', 'implement', 'prove', 'handoff'];

/** A valid live event of about EVENT_BYTES bytes with a unique id. */
export function eventBody(id: string, i: number): string {
  const event = {
    id,
    type: i % 2 === 0 ? 'node.entered' : 'gate.fired',
    actor: 'runtime-a',
    runMode: 'live',
    eventSource: 'api',
    nodeId: NODES[i % NODES.length],
    status: 'ok',
    message: '',
  };
  const bare = JSON.stringify(event).length;
  event.message = `bench event ${i} `.padEnd(Math.max(1, EVENT_BYTES - bare), 'x');
  return JSON.stringify(event);
}
