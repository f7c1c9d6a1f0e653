import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { execa } from '#execa';
import { semaphore } from '../workers/semaphore.js';
import { childEnvironment } from './child-environment.js';
import type { FinishLineEnv, RunFacts } from './facts.js';
import type { FinishLineResult } from './finish-line.js';
import { gitExecutable } from './git-executable.js';
import { PROBLEM_KINDS, type Problem, texts } from './problem.js';

/**
 * Runs the finish-line validators as children of the bridge's own installed code (SPEC
 * Authentication rule 6, CONTRACT section 6). Threats: a credential leaking into code that reads
 * agent-written artifacts (the child gets `extendEnv: false` and the explicit minimal environment
 * of child-environment.ts, which drops every credential even if a caller passes one), a hung or crashing validator (a deadline; a crash or unparsable output is a
 * problem, never a pass) and a burst of completions (at most `concurrency` children at once).
 */
export const TIMEOUT_PROBLEM = 'finish-line validators timed out';
const OUTPUT_MAX_BYTES = 8 * 1024 * 1024;

/** Told of every validator child (the bridge's metrics); nothing else depends on it. */
export interface ValidatorObserver {
  started(): void;
  finished(seconds: number, timedOut: boolean): void;
}

export interface GateOptions {
  concurrency: number;
  deadlineMs: number;
  /** Threads of the child's own hash/verify pool (HARNESS_WORKERS in the child; not a credential). */
  workers?: number;
  childEnv?: Record<string, string>;
  observer?: ValidatorObserver;
}

/**
 * The child entry: beside this file when running from dist/*.js (the installed bridge). From the
 * TypeScript sources (tests) it is the built dist/ copy, which `npm test` builds first; loading the
 * child through a TypeScript loader per spawn is too slow under load. Without a build the child is
 * loaded from source with the same loader flags as this process.
 */
function childCommand(): { file: string; args: string[] } {
  const self = fileURLToPath(import.meta.url);
  if (!self.endsWith('.ts'))
    return { file: process.execPath, args: [fileURLToPath(new URL('./child.js', import.meta.url))] };
  const built = fileURLToPath(new URL('../../dist/src/validators/child.js', import.meta.url));
  if (existsSync(built)) return { file: process.execPath, args: [built] };
  const loaders = process.execArgv.filter((a) => /^--(import|loader|experimental-loader)=/.test(a));
  return {
    file: process.execPath,
    args: [...loaders, fileURLToPath(new URL('./child.ts', import.meta.url))],
  };
}

async function spawnChild(input: string, extraArgs: string[], opts: GateOptions) {
  const { file, args } = childCommand();
  return execa(file, [...args, ...extraArgs], {
    input,
    extendEnv: false,
    env: childEnvironment({
      ...opts.childEnv,
      ...(opts.workers === undefined ? {} : { HARNESS_WORKERS: String(opts.workers) }),
    }),
    timeout: opts.deadlineMs,
    forceKillAfterDelay: 1000,
    maxBuffer: OUTPUT_MAX_BYTES,
    reject: false,
    stripFinalNewline: false,
  });
}

export function createFinishLineGate(opts: GateOptions) {
  if (!Number.isInteger(opts.concurrency) || opts.concurrency < 1)
    throw new RangeError('concurrency must be >= 1');
  if (!Number.isInteger(opts.deadlineMs) || opts.deadlineMs < 1)
    throw new RangeError('deadlineMs must be >= 1');
  const check = createFinishLineCheck(opts);
  return async (facts: RunFacts, env: FinishLineEnv): Promise<string[]> => texts(await check(facts, env));
}

/** The gate's problems with their kinds (problem.ts): what a client turns into next steps. */
export function createFinishLineCheck(opts: GateOptions) {
  const limit = semaphore(opts.concurrency);
  return (facts: RunFacts, env: FinishLineEnv): Promise<Problem[]> =>
    limit(async () => {
      const request = JSON.stringify({
        // The child runs the git this process resolved (git-executable.ts), never one it looks up.
        git: gitExecutable(),
        facts,
        env: {
          realRoot: env.realRoot,
          repoRoot: env.repoRoot,
          trustPin: env.trustPin,
          ...(env.stage === undefined ? {} : { stage: env.stage }),
          ...(env.verified === undefined ? {} : { verified: env.verified }),
          ...(env.artifactMaxBytes === undefined ? {} : { artifactMaxBytes: env.artifactMaxBytes }),
        },
      });
      opts.observer?.started();
      const startedAt = performance.now();
      let timedOut = false;
      let r: Awaited<ReturnType<typeof spawnChild>>;
      try {
        r = await spawnChild(request, [], opts);
        timedOut = r.timedOut;
      } finally {
        opts.observer?.finished((performance.now() - startedAt) / 1000, timedOut);
      }
      if (r.timedOut) return [failedRun(TIMEOUT_PROBLEM)];
      if (r.exitCode !== 0)
        return [failedRun(`finish-line validators crashed (exit ${r.exitCode ?? r.signal ?? 'unknown'})`)];
      return parseResult(r.stdout);
    });
}

const failedRun = (text: string): Problem => ({ kind: 'validators-failed', text });
const KINDS = new Set<string>(PROBLEM_KINDS);

/** The child's findings; anything but a list of `{kind, text}` of known kinds is a problem, never a pass. */
export function parseResult(stdout: unknown): Problem[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(String(stdout));
  } catch {
    return [failedRun('finish-line validators returned unparsable output')];
  }
  const r = parsed as Partial<FinishLineResult> & { ok?: unknown };
  const wellFormed = (p: unknown) =>
    typeof p === 'object' &&
    p !== null &&
    typeof (p as Problem).text === 'string' &&
    KINDS.has((p as Problem).kind);
  if (r?.ok !== true || !Array.isArray(r.findings) || !r.findings.every(wellFormed)) {
    return [failedRun('finish-line validators returned unparsable output')];
  }
  return r.findings;
}

/** Test probe: the names of the environment variables a validator child actually receives. */
export async function probeChildEnvironment(opts: GateOptions): Promise<string[]> {
  const r = await spawnChild('', ['--report-environment'], opts);
  const parsed = JSON.parse(String(r.stdout)) as { environmentNames: string[] };
  return parsed.environmentNames;
}
