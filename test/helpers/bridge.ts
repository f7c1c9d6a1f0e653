import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { execa } from '#execa';
import { finishLineGateFactory } from '../../src/cli/bridge.js';
import { type RunningBridge, type StartOptions, startBridge } from '../../src/server/start.js';
import { trustStoreDigest } from '../../src/server/trust-pin.js';
import { runPaths } from '../../src/storage/paths.js';
import { configRow, freshSchema, journalRows, suiteDatabase } from './pg-store.js';
import { copyOfRepository } from './repository-template.js';

export interface TestEnv {
  dir: string;
  repo: string;
  dataDir: string;
  artifactRoot: string;
  env: Record<string, string>;
}

export const secret = () => randomBytes(32).toString('base64url');

/** git in `repo` as a throwaway identity, never signing; resolves with the trimmed stdout. */
export const gitIn =
  (repo: string) =>
  async (...args: string[]): Promise<string> =>
    (
      await execa(
        'git',
        ['-c', 'user.name=t', '-c', 'user.email=t@localhost', '-c', 'commit.gpgsign=false', ...args],
        { cwd: repo },
      )
    ).stdout.trim();

/**
 * Writes `files` (relative path to text) into `repo` and commits them, after `git init` when
 * `init`; resolves with the new commit's name.
 */
export async function commitFiles(
  repo: string,
  files: Record<string, string>,
  init = false,
): Promise<string> {
  const git = gitIn(repo);
  if (init) await git('init', '-q');
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(repo, path)), { recursive: true });
    await writeFile(join(repo, path), text);
  }
  await git('add', '.');
  await git('commit', '-q', '-m', Object.keys(files).join(' '));
  return git('rev-parse', 'HEAD');
}

/** A committed trust store in a fresh git repository, and the pin that matches it. */
export async function makeTrustRepo(
  repo: string,
  store: object = { schema: 'harness.review-trust.v1', keys: [] },
): Promise<string> {
  await mkdir(join(repo, 'controls'), { recursive: true });
  const text = `${JSON.stringify(store, null, 2)}\n`;
  await writeFile(join(repo, 'controls', 'review-trust.v1.json'), text);
  const git = gitIn(repo);
  await git('init', '-q');
  await git('add', '.');
  await git('commit', '-q', '-m', 'trust store');
  return trustStoreDigest(text);
}

/** `database`: a PostgreSQL database whose fresh schema holds the runs (default: the suite's, else none). */
export async function makeTestEnv({
  database = suiteDatabase(),
}: {
  database?: string;
} = {}): Promise<TestEnv> {
  const dir = await mkdtemp(join(tmpdir(), 'harness-test-'));
  const repo = join(dir, 'repo');
  const dataDir = join(dir, 'data');
  const artifactRoot = join(dir, 'artifacts');
  await mkdir(artifactRoot, { recursive: true });
  // Copied: the same empty store and commit for every env, without three git children each.
  const pin = await copyOfRepository('empty trust store', (r) => makeTrustRepo(r), repo);
  return {
    dir,
    repo,
    dataDir,
    artifactRoot,
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: dir,
      HARNESS_BRIDGE_INTEGRITY_KEY: secret(),
      HARNESS_BRIDGE_ACCESS_TOKEN: secret(),
      HARNESS_HUMAN_APPROVAL_TOKEN: secret(),
      HARNESS_REVIEW_TRUST_SHA256: pin,
      HARNESS_REPO_ROOT: repo,
      HARNESS_DATA_DIR: dataDir,
      HARNESS_BRIDGE_PORT: '0',
      HARNESS_WORKERS: '1',
      ...(database === undefined ? {} : { HARNESS_DATABASE_URL: await freshSchema(database) }),
    },
  };
}

export interface TestBridge extends RunningBridge {
  t: TestEnv;
  /** JSON request with the access token unless `token: null`. */
  req: (
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
    token?: string | null,
  ) => Promise<{ status: number; body: Record<string, any>; headers: Headers }>;
  journal: (runId: string) => Promise<Buffer>;
  /** The run's sealed config as stored (run-config.json's bytes, or its row's text). */
  config: (runId: string) => Promise<Buffer>;
}

/**
 * A test bridge started again on `port`, the one its clients (hooks, watchers, relays) were given.
 * Between the close and this start another process can hold that port for a moment (the kernel
 * hands ports of its listening range to outgoing connections too): EADDRINUSE is tried again for
 * up to 10 s rather than failing the test.
 */
export async function restartTestBridge(te: TestEnv, port: string): Promise<TestBridge> {
  const until = Date.now() + 10_000;
  for (;;) {
    try {
      return await startTestBridge({ ...te, env: { ...te.env, HARNESS_BRIDGE_PORT: port } });
    } catch (err) {
      if (!/EADDRINUSE/.test((err as Error).message) || Date.now() > until) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** `realGate`: the finish-line gate exactly as `harness bridge` wires it (validator children). */
export async function startTestBridge(
  t?: TestEnv,
  { realGate, ...opts }: Omit<StartOptions, 'env'> & { realGate?: boolean } = {},
): Promise<TestBridge> {
  const te = t ?? (await makeTestEnv());
  if (realGate) opts.makeFinishLine = await finishLineGateFactory();
  // TEST_STARTUP_READER=1 reads every data directory on the startup reader's thread, however
  // small (storage/startup-read.ts): the suite then checks that path gives what the main thread's does.
  if (process.env['TEST_STARTUP_READER'] === '1') opts.storage = { readerMinBytes: 0, ...opts.storage };
  const bridge = await startBridge({ ...opts, env: te.env });
  const req: TestBridge['req'] = async (method, path, body, headers = {}, token) => {
    const h: Record<string, string> = { ...headers };
    const tok = token === undefined ? te.env['HARNESS_BRIDGE_ACCESS_TOKEN'] : token;
    if (tok !== null && tok !== undefined) h['x-harness-bridge-token'] = tok;
    if (body !== undefined && h['content-type'] === undefined) h['content-type'] = 'application/json';
    const res = await fetch(bridge.url + path, {
      method,
      headers: h,
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const text = await res.text();
    let parsed: Record<string, any>;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = { raw: text };
    }
    return { status: res.status, body: parsed, headers: res.headers };
  };
  const url = te.env['HARNESS_DATABASE_URL'];
  const journal = (runId: string) =>
    url === undefined
      ? readFile(runPaths(te.dataDir, runId).journal).catch(() => Buffer.alloc(0))
      : journalRows(url, runId);
  const config = (runId: string) =>
    url === undefined ? readFile(runPaths(te.dataDir, runId).config) : configRow(url, runId);
  return { ...bridge, t: te, req, journal, config };
}

/** Starts a bridge that is expected to refuse: the error it throws, or null (closed) if it started. */
export function startupFailure(opts: StartOptions): Promise<unknown> {
  return startBridge(opts).then(
    async (b) => {
      await b.close();
      return null;
    },
    (e: unknown) => e,
  );
}

export async function cleanup(b: TestBridge): Promise<void> {
  await b.close();
  await rm(b.t.dir, { recursive: true, force: true });
}

/** A minimal valid live event; override fields per test. */
export function ev(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: 'node.entered',
    actor: 'runtime-a',
    runMode: 'live',
    eventSource: 'api',
    nodeId: 'intake',
    message: 'm',
    status: 'ok',
    ...over,
  };
}
