/**
 * `npm run bench:watch`: `harness watch` on a large artifact root, side by side in one run with
 * `find` stating the same tree (the floor: one stat per file, no watching at all).
 *
 * The root holds BENCH_FILES files (default 21000): the adapter's 14 named artifacts, the same
 * number of unrelated files again in the directories that hold them (the watcher must look at
 * those directories, and filter their other entries), and the rest in unrelated directories (which
 * it never enters). Once the watcher is ready, BENCH_CHANGED files (default 10000) are rewritten in
 * one burst, the 14 named artifacts among them. Figures:
 *   - time from the start of the burst to the watcher's last posted event, and whether each named
 *     artifact was recorded exactly once (and nothing else: the run's journal is read back after a
 *     quiet period);
 *   - the watcher's peak RSS (VmHWM) before and after the burst, and its RSS once quiet, beside its
 *     peak RSS on a root that holds only the 14 named artifacts: what the other files cost it;
 *   - `find ROOT -type f -printf '%s\n'` (a stat of every file) on the same tree, just before.
 * The watcher runs with its default settle interval (500 ms), or BENCH_SETTLE_MS: a change is
 * posted at the earliest two intervals after its last write.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { DEFAULT_ARTIFACT_BY_NODE } from '../src/contract/index.js';
import { bridgeEnv, rssMiB, startChild } from './children.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const CLI = join(resolve(here, '..', '..'), 'dist', 'src', 'cli', 'main.cjs');
const FILES = Math.max(1000, Number(process.env['BENCH_FILES']) || 21000);
const CHANGED = Math.min(FILES, Math.max(100, Number(process.env['BENCH_CHANGED']) || 10000));
const SETTLE = process.env['BENCH_SETTLE_MS'];
const NAMED = Object.values(DEFAULT_ARTIFACT_BY_NODE);
const QUIET_MS = 3000;

/** Writes `paths` (under root) with `text(path)`, 64 at a time. */
async function writeAll(root: string, paths: string[], text: (p: string) => string): Promise<void> {
  for (let i = 0; i < paths.length; i += 64)
    await Promise.all(paths.slice(i, i + 64).map((p) => writeFile(join(root, p), text(p))));
}

/** The tree: named artifacts, fillers beside them, fillers in 100-file directories elsewhere. */
async function makeTree(root: string, fillers: boolean): Promise<string[]> {
  const dirs = [...new Set(NAMED.map((p) => dirname(p)))];
  const paths: string[] = [];
  if (fillers) {
    const beside = Math.floor(FILES / 2) - NAMED.length;
    for (let i = 0; i < beside; i += 1) paths.push(`${dirs[i % dirs.length]}/filler-${i}.txt`);
    for (let i = 0; paths.length < FILES - NAMED.length; i += 1)
      paths.push(`other/d${Math.floor(i / 100)}/f-${i}.txt`);
  }
  const all = [...paths, ...NAMED];
  for (const d of new Set(all.map((p) => dirname(p)))) await mkdir(join(root, d), { recursive: true });
  await writeAll(root, all, (p) => `first ${p}\n`);
  return paths;
}

interface WatchChild {
  proc: ChildProcess;
  posted: () => number;
  lastPostAt: () => number;
}

function startWatch(env: NodeJS.ProcessEnv, runId: string, root: string): Promise<WatchChild> {
  const args = [CLI, 'watch', runId, '--root', root, ...(SETTLE ? ['--settle-ms', SETTLE] : [])];
  const proc = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let posted = 0;
  let lastPostAt = 0;
  let out = '';
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((done, fail) => {
    proc.once('exit', (code) => fail(new Error(`harness watch exited ${code}: ${err}`)));
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const lines = out.split('\n');
      out = lines.pop() ?? '';
      for (const line of lines) {
        const record = JSON.parse(line) as Record<string, unknown>;
        if ('watching' in record) done({ proc, posted: () => posted, lastPostAt: () => lastPostAt });
        if (typeof record['seq'] === 'number') {
          posted += 1;
          lastPostAt = performance.now();
        }
      }
    });
  });
}

async function stopWatch(w: WatchChild): Promise<void> {
  w.proc.removeAllListeners('exit');
  const exited = new Promise((r) => w.proc.once('exit', r));
  w.proc.kill('SIGTERM');
  await exited;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'harness-bench-watch-'));
  const env = await bridgeEnv(dir);
  const bridge = await startChild([CLI, 'bridge'], env, 'bridge');
  // A client holds the access token only (harness watch refuses the integrity key).
  const clientEnv = {
    PATH: env['PATH'],
    HOME: dir,
    HARNESS_BRIDGE_URL: bridge.url,
    HARNESS_BRIDGE_ACCESS_TOKEN: env['HARNESS_BRIDGE_ACCESS_TOKEN'],
  };
  const api = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(bridge.url + path, {
      method,
      headers: {
        'x-harness-bridge-token': env['HARNESS_BRIDGE_ACCESS_TOKEN']!,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return (await r.json()) as Record<string, any>;
  };
  try {
    // The floor for memory: a root with the named artifacts only.
    const small = join(dir, 'small');
    await makeTree(small, false);
    await api('POST', '/runs', { id: 'bench-small', artifactRoot: small });
    const bare = await startWatch(clientEnv, 'bench-small', small);
    await new Promise((r) => setTimeout(r, QUIET_MS));
    const smallPeak = (await rssMiB(bare.proc.pid!)).peak;
    await stopWatch(bare);

    const root = join(dir, 'large');
    const fillers = await makeTree(root, true);
    await api('POST', '/runs', { id: 'bench-large', artifactRoot: root });
    const findStart = performance.now();
    const find = spawnSync('find', [root, '-type', 'f', '-printf', '%s\n'], { maxBuffer: 64 * 1024 * 1024 });
    const findMs = performance.now() - findStart;
    const files = find.stdout.toString().split('\n').length - 1;

    const w = await startWatch(clientEnv, 'bench-large', root);
    // The start's catch-up posts the 14 named artifacts (the run has no claims yet): let it finish.
    while (w.posted() < NAMED.length) await new Promise((r) => setTimeout(r, 100));
    const readyPeak = (await rssMiB(w.proc.pid!)).peak;
    // The named artifacts and an even spread of the fillers, beside them and elsewhere.
    const spread = CHANGED - NAMED.length;
    const changed = [
      ...NAMED,
      ...Array.from({ length: spread }, (_, j) => fillers[Math.floor((j * fillers.length) / spread)]!),
    ];
    const burstStart = performance.now();
    await writeAll(root, changed, (p) => `second ${p}\n`);
    const burstMs = performance.now() - burstStart;
    while (w.posted() < 2 * NAMED.length && performance.now() - burstStart < 120_000)
      await new Promise((r) => setTimeout(r, 20));
    const lastMs = w.lastPostAt() - burstStart;
    await new Promise((r) => setTimeout(r, QUIET_MS));
    const { rss, peak } = await rssMiB(w.proc.pid!);
    await stopWatch(w);

    const view = await api('GET', '/runs/bench-large?eventLimit=200');
    const watched = (view['run'].events as { eventSource: string; artifact?: string; seq: number }[]).filter(
      (e) => e.eventSource === 'watched-artifact',
    );
    const afterBurst = watched.slice(NAMED.length).map((e) => e.artifact);
    const once = NAMED.every((p) => afterBurst.filter((a) => a === p).length === 1);
    const figures = {
      'files in the root (find)': files,
      'files changed in the burst': changed.length,
      'named artifacts among them': NAMED.length,
      'burst written in (ms)': Math.round(burstMs),
      'burst start to last event (ms)': Math.round(lastMs),
      'events after the burst': afterBurst.length,
      'each named artifact recorded once': once,
      'watcher peak RSS, large root (MiB)': Number(peak.toFixed(1)),
      'watcher peak RSS before the burst (MiB)': Number(readyPeak.toFixed(1)),
      'watcher RSS 3 s after the last event (MiB)': Number(rss.toFixed(1)),
      'watcher peak RSS, named files only (MiB)': Number(smallPeak.toFixed(1)),
      'find -type f -printf %s (ms)': Math.round(findMs),
      'settle interval (ms)': Number(SETTLE ?? 500),
    };
    for (const [k, v] of Object.entries(figures)) process.stdout.write(`${k.padEnd(44)} ${v}\n`);
    if (!once || afterBurst.length !== NAMED.length) process.exitCode = 1;
  } finally {
    await bridge.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
