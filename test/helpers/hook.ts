import { spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TestBridge } from './bridge.js';
import { allEvents } from './expect.js';
import { CLI, ROOT } from './paths.js';

export interface HookRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

type Json = Record<string, unknown>;

function merge(base: Json, over: Json): Json {
  const out: Json = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    out[k] =
      v !== null &&
      typeof v === 'object' &&
      !Array.isArray(v) &&
      b !== null &&
      typeof b === 'object' &&
      !Array.isArray(b)
        ? merge(b as Json, v as Json)
        : v;
  }
  return out;
}

/** A documented payload (test/fixtures/hooks/<runtime>/<name>.json) with some fields replaced. */
export async function fixture(runtime: string, name: string, over: Json = {}): Promise<Json> {
  const text = await readFile(join(ROOT, 'test', 'fixtures', 'hooks', runtime, `${name}.json`), 'utf8');
  return merge(JSON.parse(text) as Json, over);
}

/** `harness hook <runtime>` as the runtime runs it: the payload on stdin, killed after `killMs`. */
export function runHookCli(
  runtime: string,
  payload: Json | string,
  env: Record<string, string>,
  killMs = 30_000,
): Promise<HookRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'hook', runtime], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), killMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(typeof payload === 'string' ? payload : JSON.stringify(payload));
  });
}

/** The environment of an agent's shell (and so of its hooks): the access token only. */
export function agentEnv(b: TestBridge, url = b.url): Record<string, string> {
  return {
    PATH: process.env['PATH'] ?? '',
    HOME: b.t.dir,
    HARNESS_BRIDGE_URL: url,
    HARNESS_BRIDGE_ACCESS_TOKEN: b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!,
  };
}

/** Writes `.harness/connector.json` into `project`. */
export async function writeConnector(project: string, config: Json): Promise<void> {
  await mkdir(join(project, '.harness'), { recursive: true });
  await writeFile(
    join(project, '.harness', 'connector.json'),
    JSON.stringify({ schema: 'harness.connector.v1', ...config }),
  );
}

/** A Red Zone rule holding `git push` for the release manager. */
export const GIT_PUSH_RULE = {
  command: '^git push\\b',
  approvalOwner: 'release-manager',
  approvalScope: 'git-push',
};

/** Every event of a run, as (type, nodeId, status, actor) rows. */
export async function eventRows(b: TestBridge, runId: string): Promise<string[]> {
  const r = await b.req('GET', `/runs/${runId}?eventLimit=1`);
  if (r.status !== 200) return [`${r.status} ${r.body['error']}`];
  return (await allEvents(b, runId)).map((e) => `${e['type']} ${e['nodeId']} ${e['status']} ${e['actor']}`);
}

/**
 * A fixture as a runtime would send it for a session in `project`: the documented payload with its
 * example project folder (`/home/dev/shop`) replaced by `project` everywhere, and `over` applied.
 */
export async function sessionPayload(
  runtime: string,
  name: string,
  project: string,
  over: Json = {},
): Promise<Json> {
  const text = JSON.stringify(await fixture(runtime, name)).replaceAll('/home/dev/shop', project);
  return merge(JSON.parse(text) as Json, over);
}

/** `harness hook` in this process (the engine itself): for tests that make many calls. */
export async function hookInProcess(runtime: string, payload: Json | string, env: Record<string, string>) {
  const { runHook } = await import('../../src/connectors/hook.js');
  const { runtimeTable } = await import('../../src/connectors/runtimes.js');
  return runHook(
    runtimeTable(runtime)!,
    typeof payload === 'string' ? payload : JSON.stringify(payload),
    env,
  );
}
