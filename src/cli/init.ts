import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { execa } from 'execa';
import { trustStoreDigest } from '../server/trust-pin.js';
import { atomicWrite } from '../storage/atomic.js';

export interface DevSetup {
  dir: string;
  envFile: string;
  created: boolean;
  env: Record<string, string>;
}

export function defaultDevDir(): string {
  return join(homedir(), '.harness', 'dev');
}

/** Parses the KEY=value lines `harness init` writes (no shell expansion, no quoting tricks). */
export function parseEnvFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (m?.[1] !== undefined && m[2] !== undefined) env[m[1]] = m[2];
  }
  return env;
}

const secret = () => randomBytes(32).toString('base64url');

/**
 * Creates, once, everything a newcomer would otherwise hand-make: three distinct random
 * credentials in an env file only its owner can read, a small git repository holding an empty
 * committed review-trust store, and the pin computed from it. A second run reuses them.
 */
export async function ensureDevSetup(dir: string = defaultDevDir()): Promise<DevSetup> {
  const envFile = join(dir, 'dev.env');
  const existing = await readFile(envFile, 'utf8').catch(() => null);
  if (existing !== null) return { dir, envFile, created: false, env: parseEnvFile(existing) };
  const repo = join(dir, 'repo');
  await mkdir(join(repo, 'controls'), { recursive: true, mode: 0o700 });
  const store = `${JSON.stringify({ schema: 'harness.review-trust.v1', description: 'development trust store: no reviewer enrolled yet', keys: [] }, null, 2)}\n`;
  await writeFile(join(repo, 'controls', 'review-trust.v1.json'), store);
  const git = (...args: string[]) =>
    execa(
      'git',
      [
        '-c',
        'user.name=harness init',
        '-c',
        'user.email=harness@localhost',
        '-c',
        'commit.gpgsign=false',
        ...args,
      ],
      { cwd: repo },
    );
  await git('init', '-q');
  await git('add', 'controls/review-trust.v1.json');
  await git('commit', '-q', '-m', 'Development review-trust store');
  const env = {
    HARNESS_BRIDGE_INTEGRITY_KEY: secret(),
    HARNESS_BRIDGE_ACCESS_TOKEN: secret(),
    HARNESS_HUMAN_APPROVAL_TOKEN: secret(),
    HARNESS_REVIEW_TRUST_SHA256: trustStoreDigest(store),
    HARNESS_REPO_ROOT: repo,
    HARNESS_DATA_DIR: join(dir, 'runs'),
  };
  const text = Object.entries(env)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n');
  await atomicWrite(
    envFile,
    `# harness-bridge development credentials (mode 0600). Never commit this file.\n${text}\n`,
    0o600,
  );
  return { dir, envFile, created: true, env };
}

export function registerInit(program: Command): void {
  program
    .command('init')
    .description('create development credentials and a trust store under ~/.harness/dev (once)')
    .option('--dir <dir>', 'where to create them', defaultDevDir())
    .action(async (opts: { dir: string }) => {
      const setup = await ensureDevSetup(opts.dir);
      process.stdout.write(
        setup.created
          ? `created ${setup.envFile} (mode 0600) and a trust store repository in ${join(setup.dir, 'repo')}\n`
          : `${setup.envFile} already exists; nothing changed\n`,
      );
      process.stdout.write(`load it with: set -a; . ${setup.envFile}; set +a\n`);
    });
}
