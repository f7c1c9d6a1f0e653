/**
 * Profiling aid (not a benchmark): runs one closed-loop phase of bench:ingest against the bridge
 * under `node --cpu-prof` and prints the hottest functions by self time.
 *   node dist/bench/profile-phase.js a|b [seconds] [outdir]
 */
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bridgeEnv, cpuSeconds, startChild } from './children.js';
import { closedLoop } from './load.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = resolve(here, '..', '..');
const phase = process.argv[2] === 'a' ? 'a' : 'b';
const seconds = Number(process.argv[3] ?? 8);
const out = resolve(process.argv[4] ?? (await mkdtemp(join(tmpdir(), 'harness-prof-'))));

function body(id: string, i: number): string {
  const event = {
    id,
    type: i % 2 === 0 ? 'node.entered' : 'gate.fired',
    actor: 'runtime-a',
    runMode: 'live',
    eventSource: 'api',
    nodeId: 'implement',
    status: 'ok',
    message: '',
  };
  event.message = `bench event ${i} `.padEnd(400 - JSON.stringify(event).length, 'x');
  return JSON.stringify(event);
}

const dir = await mkdtemp(join(tmpdir(), 'harness-prof-data-'));
const env: NodeJS.ProcessEnv = await bridgeEnv(dir);
if (process.env['NOSYNC']) env['NOSYNC'] = '1';
const prof = process.env['PROF'] !== '0';
const bridge = await startChild(
  [
    ...(prof ? ['--cpu-prof', '--cpu-prof-dir', out] : []),
    join(root, 'dist', 'src', 'cli', 'main.js'),
    'bridge',
  ],
  env,
  'bridge',
);
if (process.env['THREADS']) {
  const { spawn } = await import('node:child_process');
  setTimeout(() => spawn('/tmp/threads.sh', [String(bridge.pid), '5'], { stdio: 'inherit' }), 2000);
}
const c0 = cpuSeconds(bridge.pid);
const l0 = process.cpuUsage();
const r = await closedLoop(
  {
    origin: bridge.url,
    headers: {
      'content-type': 'application/json',
      'x-harness-bridge-token': env['HARNESS_BRIDGE_ACCESS_TOKEN']!,
    },
  },
  (i) => ({
    path: phase === 'a' ? `/runs/p-a-${i % 16}/events` : '/runs/p-b/events',
    body: body(`${phase}-${i}`, i),
  }),
  { connections: 50, warmupMs: 1000, durationMs: seconds * 1000 },
);
const cpu = ((cpuSeconds(bridge.pid) - c0) * 1e6) / (r.rps * (seconds + 1));
const l1 = process.cpuUsage(l0);
const lg = (l1.user + l1.system) / (r.rps * (seconds + 1));
process.stdout.write(
  `phase ${phase}: ${r.rps.toFixed(0)} req/s, ~${cpu.toFixed(0)} us CPU/req, loadgen ~${lg.toFixed(0)} us/req, non-2xx ${r.non2xx}\n`,
);
await bridge.stop();
if (prof) {
  const file = (await readdir(out))
    .filter((f) => f.endsWith('.cpuprofile'))
    .sort()
    .at(-1)!;
  const p = JSON.parse(await readFile(join(out, file), 'utf8')) as {
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
  const total = p.samples.length;
  for (const [k, n] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 45))
    process.stdout.write(`${((100 * n) / total).toFixed(1).padStart(5)}%  ${k}\n`);
  process.stdout.write(`profile: ${join(out, file)}\n`);
}
