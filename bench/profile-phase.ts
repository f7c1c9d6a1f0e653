/**
 * Development aid, not the benchmark: one closed-loop phase of bench:ingest, (a) 16 runs or (b) one
 * run, against the bare echo route and then the bridge, printing the ratio, the bridge's CPU per
 * request split by thread (from /proc) and, with PROF=1, the hottest functions of its main thread.
 *
 *   node dist/bench/profile-phase.js a|b [seconds] [rounds]
 *
 * BRIDGE_DIST=<dir>[,<dir>...] runs the bridge from other builds (dirs holding src/cli/main.cjs),
 * so versions can be compared in alternating rounds on a machine whose speed drifts; a dir written
 * with a trailing `+` also gets the node flags in BRIDGE_NODE_FLAGS.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bridgeEnv, startChild } from './children.js';
import { closedLoop, eventBody } from './load.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = resolve(here, '..', '..');
const phase = process.argv[2] === 'a' ? 'a' : 'b';
const seconds = Number(process.argv[3] ?? 8);
const rounds = Number(process.argv[4] ?? 1);
const dists = (process.env['BRIDGE_DIST'] ?? join(root, 'dist')).split(',');
const prof = process.env['PROF'] === '1';

/** CPU ticks (1/100 s) per thread of a process: main thread first, then the rest summed. */
function threadTicks(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(Number(tid), Number(f[11]) + Number(f[12]));
    } catch {
      // the thread ended
    }
  }
  return out;
}

/** Nanoseconds a thread has run and has waited runnable for a CPU (from /proc schedstat). */
function schedNs(pid: number, tid: number): { run: number; wait: number } {
  try {
    const [run, wait] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
    return { run: run ?? 0, wait: wait ?? 0 };
  } catch {
    return { run: 0, wait: 0 };
  }
}

async function measure(
  label: string,
  pid: number,
  origin: string,
  headers: Record<string, string>,
  path: (i: number) => string,
) {
  let t0 = new Map<number, number>();
  let t1 = new Map<number, number>();
  let s0 = { run: 0, wait: 0 };
  let s1 = { run: 0, wait: 0 };
  let g0 = process.cpuUsage();
  let g1 = g0;
  const warmupMs = 1000;
  const a = setTimeout(() => {
    t0 = threadTicks(pid);
    s0 = schedNs(pid, pid);
    g0 = process.cpuUsage();
  }, warmupMs);
  const b = setTimeout(
    () => {
      t1 = threadTicks(pid);
      s1 = schedNs(pid, pid);
      g1 = process.cpuUsage(g0);
    },
    warmupMs + seconds * 1000,
  );
  const r = await closedLoop(
    { origin, headers },
    (i) => ({ path: path(i), body: eventBody(`${label}-${i}`, i) }),
    {
      connections: 50,
      warmupMs,
      durationMs: seconds * 1000,
    },
  );
  clearTimeout(a);
  clearTimeout(b);
  if (t1.size === 0) t1 = threadTicks(pid);
  const us = (ticks: number) => (ticks * 1e4) / Math.max(1, r.measured);
  const main = (t1.get(pid) ?? 0) - (t0.get(pid) ?? 0);
  let rest = 0;
  for (const [tid, v] of t1) if (tid !== pid) rest += v - (t0.get(tid) ?? 0);
  // Of the window's wall time: the main thread on a CPU, and runnable but waiting for one (on two
  // cores shared with the load generator, "not busy" is often this wait, not idleness).
  const pct = (ns: number) => ((100 * ns) / (seconds * 1e9)).toFixed(0);
  const loadUs = (g1.user + g1.system) / Math.max(1, r.measured);
  process.stdout.write(
    `${label}: ${r.rps.toFixed(0)} req/s, CPU/req main ${us(main).toFixed(0)} us + other threads ${us(rest).toFixed(0)} us, main on CPU ${pct(s1.run - s0.run)}% + waiting for a CPU ${pct(s1.wait - s0.wait)}%, load generator ${loadUs.toFixed(0)} us/req, non-2xx ${r.non2xx}\n`,
  );
  return r.rps;
}

const out = await mkdtemp(join(tmpdir(), 'harness-prof-'));
const echo = await startChild(
  [join(root, 'dist', 'bench', 'echo-server.js')],
  { PATH: process.env['PATH'] },
  'echo',
);
for (let round = 0; round < rounds; round++) {
  const echoRps = await measure(
    'echo',
    echo.pid,
    echo.url,
    { 'content-type': 'application/json' },
    () => '/echo',
  );
  for (const dist of dists) {
    const dir = await mkdtemp(join(tmpdir(), 'harness-prof-data-'));
    const env = await bridgeEnv(dir);
    const profDir = join(out, String(round));
    const bridge = await startChild(
      [
        ...(prof ? ['--cpu-prof', '--cpu-prof-dir', profDir] : []),
        ...(dist.endsWith('+') ? (process.env['BRIDGE_NODE_FLAGS'] ?? '').split(' ').filter(Boolean) : []),
        join(resolve(dist.replace(/\+$/, '')), 'src', 'cli', 'main.cjs'),
        'bridge',
      ],
      env,
      'bridge',
    );
    const headers = {
      'content-type': 'application/json',
      'x-harness-bridge-token': env['HARNESS_BRIDGE_ACCESS_TOKEN']!,
    };
    const rps = await measure(`bridge ${phase} ${dist}`, bridge.pid, bridge.url, headers, (i) =>
      phase === 'a' ? `/runs/p-a-${i % 16}/events` : '/runs/p-b/events',
    );
    process.stdout.write(`  ratio ${(rps / echoRps).toFixed(2)}\n`);
    await bridge.stop();
    await rm(dir, { recursive: true, force: true });
    if (prof) await printProfile(profDir, bridge.pid);
  }
}
await echo.stop();

/** Self time by function in the bridge's main-thread profile. */
async function printProfile(dir: string, pid: number): Promise<void> {
  const file = (await readdir(dir)).find((f) => f.includes(`.${pid}.0.`) && f.endsWith('.cpuprofile'));
  if (!file) return;
  const p = JSON.parse(await readFile(join(dir, file), 'utf8')) as {
    nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
    samples: number[];
  };
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  for (const s of p.samples) {
    const f = byId.get(s)!.callFrame;
    const k = `${f.functionName || '(anon)'} ${f.url.replace(/.*node_modules\//, '').replace(/.*\/dist\//, '')}:${f.lineNumber}`;
    self.set(k, (self.get(k) ?? 0) + 1);
  }
  for (const [k, n] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 30))
    process.stdout.write(`${((100 * n) / p.samples.length).toFixed(1).padStart(5)}%  ${k}\n`);
  process.stdout.write(`profile: ${join(dir, file)}\n`);
}
