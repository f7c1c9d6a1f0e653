/**
 * `npm run bench:hook`: the wall time of one `harness hook` call, side by side in one run with a
 * bare `node -e 0` (the floor every hook command pays: a Node process start).
 *
 *   (a) a call that posts one event: PostToolUse after the agent rewrote an artifact, so the hook
 *       reads its run memory, fingerprints the adapter's artifacts and posts one artifact.written
 *       to a real bridge (a child process) and waits for the durable answer. Target <= 1.5x.
 *   (b) a call that matches nothing and must not contact the bridge: PreToolUse of a Read with a
 *       Red Zone rule on `git push`. Target <= 1.2x.
 *
 * The three commands alternate call by call (BENCH_CALLS rounds, default 40, after 5 warm-up
 * rounds), so all see the same machine; the figures are medians. (b) is checked to have sent
 * nothing: the run's event count must not move during its rounds.
 *
 * Wall time on a shared 2-core VM moves with every other process. With BENCH_INSTRUCTIONS=1 (and
 * valgrind installed) each command also runs once under callgrind (`node --jitless`, so no JIT
 * thread adds noise) and the instructions it executed are printed beside the bare start's: the
 * same count on every run, whatever else the machine does. It counts the hook's own process only,
 * not the bridge's work for (a).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { bridgeEnv, startChild } from './children.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = resolve(here, '..', '..');
const CLI = join(root, 'dist', 'src', 'cli', 'main.cjs');
const CALLS = Math.max(5, Number(process.env['BENCH_CALLS']) || 40);

function timed(
  args: string[],
  env: NodeJS.ProcessEnv,
  stdin: string,
): Promise<{ ms: number; code: number | null; stderr: string }> {
  return new Promise((done, fail) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, args, { env, stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', fail);
    child.on('close', (code) => done({ ms: performance.now() - t0, code, stderr }));
    child.stdin.end(stdin);
  });
}

/** Instructions one run of `node --jitless <args>` executes, counted by callgrind. */
function instructions(args: string[], env: NodeJS.ProcessEnv, stdin: string): number {
  const r = spawnSync(
    'valgrind',
    ['--tool=callgrind', '--callgrind-out-file=/dev/null', process.execPath, '--jitless', ...args],
    {
      env,
      input: stdin,
      encoding: 'utf8',
    },
  );
  const n = /Collected : (\d+)/.exec(r.stderr ?? '')?.[1];
  if (n === undefined) throw new Error(`callgrind counted nothing (is valgrind installed?): ${r.stderr}`);
  return Number(n);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-hook-'));
  try {
    const env = await bridgeEnv(dir);
    const bridge = await startChild([CLI, 'bridge'], env, 'bridge');
    const project = join(dir, 'project');
    await mkdir(join(project, '.harness'), { recursive: true });
    await mkdir(join(project, 'run'), { recursive: true });
    await writeFile(
      join(project, '.harness', 'connector.json'),
      JSON.stringify({
        schema: 'harness.connector.v1',
        redZone: [{ command: '^git push\\b', approvalOwner: 'release-manager', approvalScope: 'git-push' }],
      }),
    );
    const hookEnv = {
      PATH: env['PATH'],
      HOME: dir,
      HARNESS_BRIDGE_URL: bridge.url,
      HARNESS_BRIDGE_ACCESS_TOKEN: env['HARNESS_BRIDGE_ACCESS_TOKEN'],
    };
    const payload = (event: string, extra: object) =>
      JSON.stringify({
        session_id: 'bench',
        transcript_path: '/dev/null',
        cwd: project,
        hook_event_name: event,
        ...extra,
      });
    const hook = [CLI, 'hook', 'claude-code'];
    const start = await timed(hook, hookEnv, payload('SessionStart', { source: 'startup' }));
    if (start.code !== 0) throw new Error(`SessionStart failed: ${start.stderr}`);
    const post = payload('PostToolUse', { tool_name: 'Bash', tool_input: { command: 'make intake' } });
    const read = payload('PreToolUse', {
      tool_name: 'Read',
      tool_input: { file_path: join(project, 'README.md') },
    });
    const count = async () => {
      const r = await fetch(`${bridge.url}/runs/claude-code-bench?eventLimit=1`, {
        headers: { 'x-harness-bridge-token': String(env['HARNESS_BRIDGE_ACCESS_TOKEN']) },
      });
      return ((await r.json()) as { run: { eventCount: number } }).run.eventCount;
    };
    const bare: number[] = [];
    const posting: number[] = [];
    const quiet: number[] = [];
    let quietSent = 0;
    for (let i = -5; i < CALLS; i++) {
      const b = await timed(['-e', '0'], hookEnv, '');
      await writeFile(join(project, 'run', 'intake.json'), `{"round":${i}}\n`);
      const before = await count();
      const p = await timed(hook, hookEnv, post);
      const middle = await count();
      const q = await timed(hook, hookEnv, read);
      quietSent += (await count()) - middle;
      if (p.code !== 0 || q.code !== 0) throw new Error(`a hook failed: ${p.stderr}${q.stderr}`);
      if (middle - before !== 1) throw new Error(`the posting call stored ${middle - before} events, not 1`);
      if (i < 0) continue;
      bare.push(b.ms);
      posting.push(p.ms);
      quiet.push(q.ms);
    }
    const counted = process.env['BENCH_INSTRUCTIONS']
      ? await (async () => {
          await writeFile(join(project, 'run', 'intake.json'), '{"round":"counted"}\n');
          return [
            instructions(['-e', '0'], hookEnv, ''),
            instructions(hook, hookEnv, post),
            instructions(hook, hookEnv, read),
          ];
        })()
      : null;
    await bridge.stop();
    if (quietSent !== 0) throw new Error(`the no-match call sent ${quietSent} events`);
    const base = median(bare);
    const row = (name: string, xs: number[], target: number) => {
      const ratio = median(xs) / base;
      if (ratio > target) process.exitCode = 1;
      return `${name.padEnd(38)} ${median(xs).toFixed(1).padStart(7)} ms  ${ratio.toFixed(2)}x  target <= ${target}x  ${ratio <= target ? 'PASS' : 'FAIL'}`;
    };
    process.stdout.write(
      [
        `bench:hook: ${CALLS} rounds, medians (node ${process.version})`,
        `${'node -e 0 (baseline)'.padEnd(38)} ${base.toFixed(1).padStart(7)} ms`,
        row('(a) hook posting one event', posting, 1.5),
        row('(b) hook matching nothing (no request)', quiet, 1.2),
        ...(counted === null
          ? []
          : [
              `instructions (callgrind, node --jitless): node -e 0 ${(counted[0]! / 1e6).toFixed(0)}M, ` +
                `(a) ${(counted[1]! / counted[0]!).toFixed(2)}x, (b) ${(counted[2]! / counted[0]!).toFixed(2)}x`,
            ]),
        '',
      ].join('\n'),
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
