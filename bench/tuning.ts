/**
 * `npm run bench:tuning`: what HARNESS_WORKERS and HARNESS_VALIDATOR_CONCURRENCY change, with the
 * metrics that show it (docs/operations.md "Tuning").
 *
 * Nine runs are prepared once by examples/minimal-run/run.sh against a real bridge, the script's
 * last command (the completion) held back: each is the default 14-node run, every node passed or
 * skipped, its proof written by `harness proof run`. The first also carries a large root under
 * its artifact root: the finish-line bench's 20000 files of 1-4 KiB and, by default, 200 rather
 * than 1000 files of 1 MiB (about 250 MiB in all), with a review/review.json whose inventory names
 * every one, so its gate hashes all of them twice (SPEC rule 10) and its validator child scans
 * them for secrets (one thread, about a minute per GiB: BENCH_LARGE=1000 for the 1 GiB root).
 * Then, for each pair of settings, a bridge starts on a copy of the prepared data directory and
 *   (1) completes the large run alone: the gate time of one large completion;
 *   (2) completes the eight others at once: the time until all eight are answered.
 * Every completion must be accepted. While each runs, /metrics is scraped every 50 ms for the
 * hash pool's busy threads and queued tasks and the validator children running; the histograms'
 * sums give the time spent hashing (queue wait included) and in validator children.
 * The baseline is openssl over the same root in two processes, measured in the same run.
 *
 * Env knobs: BENCH_WORKERS (default 1,2,4), BENCH_VALIDATORS (default 1,2,4), BENCH_ROUNDS
 * (default 1: each setting measured once per round, rounds alternate), BENCH_LARGE /
 * BENCH_SMALL (the large root's file counts, default 200 / 20000), BENCH_CONCURRENT (default 8),
 * BENCH_CPU_PROF=<dir> (the measured bridges write CPU profiles there).
 */
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { opensslBaseline, writeTree } from './artifact-tree.js';
import { bridgeEnv, type Child, startChild } from './children.js';
import { median } from './load.js';

const run = promisify(execFile);
const here = fileURLToPath(new URL('.', import.meta.url));
const ROOT = resolve(here, '..', '..');
const CLI = join(ROOT, 'dist', 'src', 'cli', 'main.cjs');
const EXAMPLE = join(ROOT, 'examples', 'minimal-run', 'run.sh');

const list = (name: string, fallback: number[]) => {
  const raw = process.env[name];
  if (!raw) return fallback;
  const values = raw.split(',').map(Number);
  if (!values.every((v) => Number.isInteger(v) && v > 0)) throw new Error(`${name}: integers above 0`);
  return values;
};
const num = (name: string, fallback: number) => {
  const v = Number(process.env[name]);
  return Number.isInteger(v) && v > 0 ? v : fallback;
};
const WORKERS = list('BENCH_WORKERS', [1, 2, 4]);
const VALIDATORS = list('BENCH_VALIDATORS', [1, 2, 4]);
const ROUNDS = num('BENCH_ROUNDS', 1);
const LARGE = num('BENCH_LARGE', 200);
const SMALL = num('BENCH_SMALL', 20_000);
const CONCURRENT = num('BENCH_CONCURRENT', 8);
const LARGE_RUN = 'tuning-large';
const concurrentRun = (i: number) => `tuning-${i + 1}`;

const log = (s: string) => process.stdout.write(`${s}\n`);
const MiB = 1024 * 1024;

/**
 * The example's commands, except that `harness emit ... run.completed` does nothing: the run is
 * left one step from completion. A shell wrapper, because the script runs `$HARNESS` as a command.
 */
async function holdBackCompletion(dir: string): Promise<string> {
  const wrapper = join(dir, 'harness-held.sh');
  await writeFile(
    wrapper,
    `#!/bin/sh\ncase " $* " in *" run.completed "*) echo "(held back: $*)"; exit 0;; esac\nexec "${process.execPath}" "${CLI}" "$@"\n`,
    { mode: 0o755 },
  );
  return wrapper;
}

/** examples/minimal-run/run.sh in `project` (made empty), for `runId`, the completion held back. */
async function prepare(project: string, runId: string, env: NodeJS.ProcessEnv, harness: string, url: string) {
  await mkdir(project, { recursive: true });
  try {
    await run('sh', [EXAMPLE], {
      cwd: project,
      env: {
        PATH: env['PATH'],
        HOME: project,
        HARNESS: harness,
        HARNESS_BRIDGE_URL: url,
        HARNESS_BRIDGE_ACCESS_TOKEN: env['HARNESS_BRIDGE_ACCESS_TOKEN'],
        RUN_ID: runId,
      },
      maxBuffer: 16 * MiB,
    });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    throw new Error(`preparing ${runId} failed:\n${e.stdout?.slice(-2000)}\n${e.stderr?.slice(-2000)}`);
  }
}

interface Scrape {
  busy: number;
  queued: number;
  validators: number;
  hashSeconds: number;
  hashTasks: number;
  validatorSeconds: number;
  validatorRuns: number;
}

/** The figures this bench reads off one /metrics answer (unlabelled series only). */
async function scrape(url: string, token: string): Promise<Scrape> {
  const res = await fetch(`${url}/metrics`, { headers: { 'x-harness-bridge-token': token } });
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  const text = await res.text();
  const value = (name: string) => {
    const m = new RegExp(`^${name} ([0-9.e+-]+)$`, 'm').exec(text);
    if (!m) throw new Error(`/metrics has no ${name}`);
    return Number(m[1]);
  };
  return {
    busy: value('bridge_hash_pool_threads_busy'),
    queued: value('bridge_hash_pool_queued_tasks'),
    validators: value('bridge_validator_children_running'),
    hashSeconds: value('bridge_hash_pool_task_seconds_sum'),
    hashTasks: value('bridge_hash_pool_task_seconds_count'),
    validatorSeconds: value('bridge_validator_seconds_sum'),
    validatorRuns: value('bridge_validator_seconds_count'),
  };
}

interface Measured {
  ms: number;
  maxBusy: number;
  maxQueued: number;
  maxValidators: number;
  hashSeconds: number;
  hashTasks: number;
  validatorSeconds: number;
  validatorRuns: number;
}

/** Runs `work` while scraping /metrics every 50 ms; the maxima seen and the histograms' deltas. */
async function observed(bridge: Child, token: string, work: () => Promise<void>): Promise<Measured> {
  const before = await scrape(bridge.url, token);
  let maxBusy = 0;
  let maxQueued = 0;
  let maxValidators = 0;
  let done = false;
  const sampler = (async () => {
    while (!done) {
      const s = await scrape(bridge.url, token);
      maxBusy = Math.max(maxBusy, s.busy);
      maxQueued = Math.max(maxQueued, s.queued);
      maxValidators = Math.max(maxValidators, s.validators);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const t0 = performance.now();
  try {
    await work();
  } finally {
    done = true;
  }
  const ms = performance.now() - t0;
  await sampler;
  const after = await scrape(bridge.url, token);
  return {
    ms,
    maxBusy,
    maxQueued,
    maxValidators,
    hashSeconds: after.hashSeconds - before.hashSeconds,
    hashTasks: after.hashTasks - before.hashTasks,
    validatorSeconds: after.validatorSeconds - before.validatorSeconds,
    validatorRuns: after.validatorRuns - before.validatorRuns,
  };
}

/** Posts the completion the example held back; it must be accepted. */
async function complete(bridge: Child, token: string, runId: string): Promise<void> {
  const res = await fetch(`${bridge.url}/runs/${runId}/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-harness-bridge-token': token },
    body: JSON.stringify({
      type: 'run.completed',
      nodeId: 'handoff',
      actor: 'runtime-a',
      runMode: 'live',
      eventSource: 'api',
      message: 'bench:tuning',
      status: 'passed',
    }),
  });
  if (res.status !== 201) throw new Error(`completing ${runId}: ${res.status} ${await res.text()}`);
}

function row(cells: string[]): string {
  const widths = [9, 11, 14, 15, 13, 13, 13];
  return cells.map((c, i) => c.padEnd(widths[i] ?? 10)).join(' ');
}

const describe = (m: Measured) =>
  `busy<=${m.maxBusy} queued<=${m.maxQueued} validators<=${m.maxValidators}; hashing ${m.hashSeconds.toFixed(1)} s in ${m.hashTasks} tasks, validators ${m.validatorSeconds.toFixed(1)} s in ${m.validatorRuns}`;

async function main(): Promise<void> {
  const dir = await realpath(await mkdtemp(join(tmpdir(), 'harness-bench-tuning-')));
  const cleanup = () => rm(dir, { recursive: true, force: true });
  process.once('SIGINT', () => void cleanup().then(() => process.exit(130)));
  let bridge: Child | null = null;
  try {
    log(
      `machine: ${availableParallelism()} cores (${cpus()[0]?.model ?? '?'}), node ${process.version}, load ${loadavg()[0]?.toFixed(1)}`,
    );
    const env = await bridgeEnv(dir);
    delete env['HARNESS_WORKERS'];
    const token = env['HARNESS_BRIDGE_ACCESS_TOKEN'] ?? '';
    const data = env['HARNESS_DATA_DIR'] ?? '';
    let t0 = performance.now();
    bridge = await startChild([CLI, 'bridge'], env, 'bridge');
    const harness = await holdBackCompletion(dir);
    const projects = [LARGE_RUN, ...Array.from({ length: CONCURRENT }, (_, i) => concurrentRun(i))];
    const url = bridge.url;
    let next = 0;
    const preparer = async () => {
      for (let runId = projects[next++]; runId !== undefined; runId = projects[next++])
        await prepare(join(dir, runId), runId, env, harness, url);
    };
    await Promise.all([preparer(), preparer(), preparer()]);
    await bridge.stop();
    bridge = null;

    // The large root goes under the first run's artifact root (its evidence/), which git ignores.
    const evidence = join(dir, LARGE_RUN, 'evidence');
    const files = await writeTree(join(evidence, 'bulk'), LARGE, SMALL);
    const paths = files.map((f) => `bulk/${f.path}`);
    const bytes = files.reduce((n, f) => n + f.size, 0);
    const base = await opensslBaseline(evidence, paths);
    const inventory = files.map((f, i) => ({
      path: paths[i],
      sha256: base.digests.get(paths[i] ?? ''),
      size: f.size,
    }));
    await mkdir(join(evidence, 'review'), { recursive: true });
    await writeFile(
      join(evidence, 'review', 'review.json'),
      JSON.stringify({ schema: 'harness.review.v2', inventory }),
    );
    log(
      `prepared ${projects.length} runs with examples/minimal-run/run.sh and a ${files.length}-file, ${(bytes / MiB).toFixed(0)} MiB root in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
    );

    const prof = process.env['BENCH_CPU_PROF'];
    const profiling = prof ? ['--cpu-prof', '--cpu-prof-dir', resolve(prof)] : [];
    const settings = WORKERS.flatMap((workers) => VALIDATORS.map((validators) => ({ workers, validators })));
    const results = new Map<string, { large: Measured[]; burst: Measured[] }>();
    const baselines: number[] = [base.ms];
    for (let round = 0; round < ROUNDS; round++) {
      for (const { workers, validators } of settings) {
        const key = `${workers}/${validators}`;
        const copy = join(dir, `data-${workers}-${validators}`);
        await cp(data, copy, { recursive: true });
        t0 = performance.now();
        bridge = await startChild(
          [...profiling, CLI, 'bridge'],
          {
            ...env,
            HARNESS_DATA_DIR: copy,
            HARNESS_WORKERS: String(workers),
            HARNESS_VALIDATOR_CONCURRENCY: String(validators),
          },
          'bridge',
        );
        const b = bridge;
        const large = await observed(b, token, () => complete(b, token, LARGE_RUN));
        const burst = await observed(b, token, async () => {
          await Promise.all(
            Array.from({ length: CONCURRENT }, (_, i) => complete(b, token, concurrentRun(i))),
          );
        });
        await b.stop();
        bridge = null;
        await rm(copy, { recursive: true, force: true });
        const r = results.get(key) ?? { large: [], burst: [] };
        r.large.push(large);
        r.burst.push(burst);
        results.set(key, r);
        log(
          `workers ${workers}, validators ${validators}: large ${large.ms.toFixed(0)} ms (${describe(large)})`,
        );
        log(`  ${CONCURRENT} at once ${burst.ms.toFixed(0)} ms (${describe(burst)})`);
      }
      baselines.push((await opensslBaseline(evidence, paths)).ms);
    }

    const pick = (ms: Measured[]) => ms.find((m) => m.ms === median(ms.map((x) => x.ms))) ?? ms[0]!;
    log('');
    log(
      `baseline: openssl over the large root in 2 processes, median ${median(baselines).toFixed(0)} ms (the gate hashes it twice)`,
    );
    log(
      row([
        'workers',
        'validators',
        'large gate ms',
        `${CONCURRENT} at once ms`,
        'busy/queued',
        'validators<=',
        'hash s/val s',
      ]),
    );
    for (const { workers, validators } of settings) {
      const r = results.get(`${workers}/${validators}`)!;
      const large = pick(r.large);
      const burst = pick(r.burst);
      log(
        row([
          String(workers),
          String(validators),
          large.ms.toFixed(0),
          burst.ms.toFixed(0),
          `${burst.maxBusy}/${burst.maxQueued}`,
          String(burst.maxValidators),
          `${burst.hashSeconds.toFixed(1)}/${burst.validatorSeconds.toFixed(1)}`,
        ]),
      );
    }
    log(
      `(${ROUNDS} round(s); the last three columns are the ${CONCURRENT}-completion burst's: the most hash pool threads busy and tasks queued, validator children running, seen by a 50 ms scrape, and the time the pool tasks (queue wait included) and the validator children took; load ${loadavg()[0]?.toFixed(1)} at the end)`,
    );
  } finally {
    await bridge?.stop();
    await cleanup();
  }
}

await main();
