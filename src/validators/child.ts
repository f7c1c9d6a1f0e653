/**
 * The finish-line validator process: reads one JSON request `{git, facts, env}` from stdin, runs
 * the orchestrator and writes one JSON result to stdout. It is started by runner.ts with an
 * explicit environment that lacks every bridge credential; it holds none and needs none. It runs
 * the git its parent resolved and names in the request, never one found on a PATH.
 *
 * `--report-environment` (an explicit argument only the runner's probe passes) makes it print the
 * names of its environment variables instead, so tests can prove the credentials are absent.
 *
 * Inventory hashing and Ed25519 checks run in a Piscina pool of its own (the bridge's pool lives
 * in another process), HARNESS_WORKERS threads, started only when a rule first needs it. The
 * bridge's artifact ceiling (`env.artifactMaxBytes`) bounds what it hashes, there and inline.
 */
import type { HashLimits, HashPool } from '../workers/pool.js';
import type { FinishLineEnv, ValidatorWorkers } from './facts.js';
import { runFinishLine } from './finish-line.js';
import { useGit } from './git-executable.js';

/**
 * Facts (the state is capped by the 8 MiB snapshot ceiling) and the verified digests (at most one
 * per claim, referenced document and named path, NAMED_PATHS_MAX of those): a named path's text
 * comes from a document within DOCUMENT_MAX_BYTES (three documents, 24 MiB), and each digest
 * entry adds some 70 bytes (70 MB at NAMED_PATHS_MAX): under this even at every ceiling.
 */
const MAX_REQUEST_BYTES = 128 * 1024 * 1024;

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    size += (chunk as Buffer).length;
    if (size > MAX_REQUEST_BYTES) throw new Error('request too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function main(): Promise<void> {
  if (process.argv.includes('--report-environment')) {
    process.stdout.write(JSON.stringify({ ok: true, environmentNames: Object.keys(process.env).sort() }));
    return;
  }
  const request = JSON.parse(await readStdin()) as { git: string; facts: never; env: FinishLineEnv };
  useGit(request.git);
  const limits = request.env.artifactMaxBytes === undefined ? {} : { maxBytes: request.env.artifactMaxBytes };
  const workers = lazyPool(workerThreads(process.env['HARNESS_WORKERS']), limits);
  try {
    const result = await runFinishLine(request.facts, { ...request.env, workers });
    process.stdout.write(JSON.stringify({ ok: true, ...result }));
  } finally {
    await workers.close();
  }
}

/** HARNESS_WORKERS as the bridge validates it (1-64); otherwise the pool's default. */
function workerThreads(value: string | undefined): number | undefined {
  const n = Number(value);
  return Number.isInteger(n) && n >= 1 && n <= 64 ? n : undefined;
}

function lazyPool(
  threads: number | undefined,
  limits: HashLimits,
): ValidatorWorkers & { close(): Promise<void> } {
  let pool: Promise<HashPool> | null = null;
  const get = () => {
    pool ??= import('../workers/pool.js').then((m) => new m.HashPool(threads, limits));
    return pool;
  };
  return {
    claimMany: async (root, paths) => (await get()).claimMany(root, paths),
    verifyEd25519: async (task) => (await get()).verifyEd25519(task),
    close: async () => {
      if (pool) await (await pool).close();
    },
  };
}

main().catch((err: unknown) => {
  process.stderr.write(`finish-line child: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 3;
});
