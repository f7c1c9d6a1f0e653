import { type ChildProcess, execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Test } from 'tap';
import { execa } from '#execa';
import type { TestBridge } from './bridge.js';
import { CLI } from './paths.js';
import { json, type RecordingUpstream, startRecordingUpstream } from './recording-upstream.js';

export { CLI };

/** How the child exits; one still running after 30 s (it should have refused) is killed, code null. */
export async function exitOf(child: ChildProcess): Promise<{ code: number | null; stderr: string }> {
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const deadline = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const [code] = await once(child, 'exit');
  clearTimeout(deadline);
  return { code: code as number | null, stderr };
}

/** `harness verify` run with `env`: its exit code and standard output. */
export function runVerify(env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string }> {
  return promisify(execFile)(process.execPath, [CLI, 'verify'], { env }).then(
    (r) => ({ code: 0, stdout: r.stdout }),
    (e: { code: number; stdout: string }) => ({ code: e.code, stdout: e.stdout }),
  );
}

/**
 * A recording stand-in for the bridge that answers every request with a run just created (what a
 * client command accepts), and a temporary HOME; both removed in teardown.
 */
export async function clientStub(t: {
  teardown(fn: () => unknown): void;
}): Promise<{ upstream: RecordingUpstream; root: string }> {
  const upstream = await startRecordingUpstream(
    json(200, {
      ok: true,
      created: true,
      seq: 0,
      run: {
        id: 'run-1',
        status: 'running',
        approvals: [],
        completionPreview: { ready: true, problems: [] },
      },
    }),
  );
  t.teardown(() => upstream.close());
  const root = await mkdtemp(join(tmpdir(), 'harness-client-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  return { upstream, root };
}

/** The built CLI with exactly `env`: its exit code and both streams (never throws on a non-zero exit). */
export async function runCli(
  args: string[],
  env: Record<string, string>,
  cwd?: string,
  timeoutMs?: number,
): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  // A command that should refuse but runs on (a watcher) is killed at `timeoutMs`: exit -1. By
  // default a command that hangs fails its test within 4 minutes, not at the file's 600 s.
  const r = await execa(process.execPath, [CLI, ...args], {
    reject: false,
    extendEnv: false,
    env,
    ...(cwd === undefined ? {} : { cwd }),
    timeout: timeoutMs ?? 240_000,
  });
  return { exitCode: r.exitCode ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** A writer's refusal (issue 29 item 1): exit 2 and one line on stderr naming `fragment`. */
export function expectRefused(t: Test, r: { exitCode: number; stderr: string }, fragment: string): void {
  t.equal(r.exitCode, 2, r.stderr);
  t.equal(r.stderr.trimEnd().split('\n').length, 1, `one line on stderr: ${r.stderr}`);
  t.ok(r.stderr.includes(fragment), `stderr names "${fragment}": ${r.stderr}`);
}

/** What a client command needs to talk to test bridge `b`: its URL and access token, and a HOME. */
export function bridgeClientEnv(b: TestBridge): Record<string, string> {
  return {
    PATH: process.env['PATH'] ?? '',
    HOME: b.t.dir,
    HARNESS_BRIDGE_URL: b.url,
    HARNESS_BRIDGE_ACCESS_TOKEN: b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!,
  };
}
