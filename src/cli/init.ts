import { createPublicKey, generateKeyPairSync, type KeyObject, randomBytes } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { execa } from '#execa';
import { trustStoreDigest } from '../server/trust-pin.js';
import { atomicWrite } from '../storage/atomic.js';
import { exportKeyId, parseExportKey } from '../storage/bundle-seal.js';
import { EXPORT_KEY_NAME } from '../validators/child-environment.js';
import { DEFAULT_BRIDGE_URL, parseEnvFile, UsageError } from './env.js';

export { parseEnvFile };

/** One file `harness init` keeps in the dev directory, and the shell it is for. */
export interface DevFile {
  path: string;
  /** Written by this call; false: it was there already and was left as it was. */
  created: boolean;
  role: string;
  /** The mode it was written with, when not 0600 (the public half of the export key: 0644). */
  mode?: number;
  /** Kept, but this call added the export key to it (dev.env of an installation older than the key). */
  added?: string;
}

export interface DevSetup {
  dir: string;
  envFile: string;
  /** dev.env and the trust store were made by this call (the role files may be made on any call). */
  created: boolean;
  env: Record<string, string>;
  /** dev.env, then one file per shell role (ROLE_FILES), then the export key's public half. */
  files: DevFile[];
  /** The export key's public half (PEM) and its ID, as export-key.pub holds it. */
  exportKey: { pem: string; keyId: string };
}

/** Beside the runs (`runs/`), readable by anyone: the public half of the bridge's export key. */
export const EXPORT_PUBLIC_KEY_FILE = 'export-key.pub';

/** A new Ed25519 export key: its private half as dev.env holds it (base64 PKCS #8 DER). */
function newExportKey(): string {
  const { privateKey } = generateKeyPairSync('ed25519');
  return privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64');
}

/**
 * SPEC Authentication 7: a normal agent shell receives only the access token, an approval shell the
 * access token and the human token. dev.env, which alone holds the integrity key, is the bridge's;
 * each other shell sources the file of its role, so none ever holds a credential it must not.
 */
export const ROLE_FILES = [
  {
    name: 'agent.env',
    keys: ['HARNESS_BRIDGE_ACCESS_TOKEN'],
    role: 'agent shells (harness emit, explain, run create, mcp): the access token',
  },
  {
    name: 'approve.env',
    keys: ['HARNESS_BRIDGE_ACCESS_TOKEN', 'HARNESS_HUMAN_APPROVAL_TOKEN'],
    role: 'the approval shell only (harness approve): the access and human tokens',
  },
] as const;

const BRIDGE_ROLE =
  'the bridge (npm start, harness bridge) and harness verify only: all three credentials, the export key, the pin and paths';

export function defaultDevDir(): string {
  return join(homedir(), '.harness', 'dev');
}

const secret = () => randomBytes(32).toString('base64url');

const envText = (env: Record<string, string>, what: string) =>
  `# harness-bridge development ${what} (mode 0600). Never commit this file.\n${Object.entries(env)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n')}\n`;

/**
 * Creates, once, everything a newcomer would otherwise hand-make: three distinct random
 * credentials in an env file only its owner can read, a small git repository holding an empty
 * committed review-trust store, and the pin computed from it. A second run reuses them. Every run
 * writes whichever role file (ROLE_FILES) is missing, from the credentials in dev.env: a dev
 * directory made before the role files existed gets them without any credential changing.
 */
export async function ensureDevSetup(dir: string = defaultDevDir()): Promise<DevSetup> {
  try {
    return await devSetup(dir);
  } catch (err) {
    // A directory that cannot be made or written (a file in the way, no permission, a read-only
    // file system) is the environment's fault, not a failed check: exit 2, naming the directory.
    const code = (err as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code))
      throw new UsageError(`cannot set up the development directory ${dir}: ${(err as Error).message}`);
    throw err;
  }
}

async function devSetup(dir: string): Promise<DevSetup> {
  const envFile = join(dir, 'dev.env');
  const existing = await readFile(envFile, 'utf8').catch(() => null);
  const env = existing === null ? await createDevEnv(dir, envFile) : parseEnvFile(existing);
  const devEnv: DevFile = { path: envFile, created: existing === null, role: BRIDGE_ROLE };
  const files: DevFile[] = [devEnv];
  // An export key dev.env holds is judged before anything is written from it.
  let exportKey = env[EXPORT_KEY_NAME] ? privateExportKey(envFile, env[EXPORT_KEY_NAME]) : null;
  for (const { name, keys, role } of ROLE_FILES) {
    const path = join(dir, name);
    // New credentials make any role file already there stale: it holds the lost dev.env's tokens.
    const present =
      existing !== null &&
      (await lstat(path).then(
        () => true,
        () => false,
      ));
    if (!present) {
      const picked: Record<string, string> = {};
      for (const key of keys) {
        const value = env[key];
        // Never made up here: a new token in a role file would not be the one the bridge holds.
        if (!value) throw new UsageError(`${envFile} has no ${key}, so ${name} cannot be written from it`);
        picked[key] = value;
      }
      await atomicWrite(path, envText(picked, `credentials for ${role}`), 0o600);
    }
    files.push({ path, created: !present, role });
  }
  // A dev directory made before the export key existed gets one (once its role files could be
  // written from it); its other credentials stay as they were.
  if (exportKey === null) {
    env[EXPORT_KEY_NAME] = newExportKey();
    exportKey = privateExportKey(envFile, env[EXPORT_KEY_NAME]);
    await atomicWrite(envFile, envText(env, 'credentials'), 0o600);
    devEnv.added = EXPORT_KEY_NAME;
  }
  const { file, pem, keyId } = await writePublicKey(dir, exportKey);
  files.push(file);
  return { dir, envFile, created: existing === null, env, files, exportKey: { pem, keyId } };
}

function privateExportKey(envFile: string, text: string): KeyObject {
  try {
    return parseExportKey(text, 'private');
  } catch (err) {
    throw new UsageError(`${EXPORT_KEY_NAME} in ${envFile} ${(err as Error).message}`);
  }
}

/**
 * export-key.pub, derived from the private half in dev.env: written when missing or when it is not
 * that key's public half (it holds nothing secret, and the private half is the one that signs).
 */
async function writePublicKey(dir: string, key: KeyObject) {
  const pem = String(createPublicKey(key).export({ type: 'spki', format: 'pem' }));
  const path = join(dir, EXPORT_PUBLIC_KEY_FILE);
  const present = await readFile(path, 'utf8').catch(() => null);
  if (present !== pem) await atomicWrite(path, pem, 0o644);
  const role = 'anyone: the public half of the export key (harness verify --bundle, harness replay)';
  return { file: { path, created: present !== pem, role, mode: 0o644 }, pem, keyId: exportKeyId(key) };
}

const STORE_PATH = 'controls/review-trust.v1.json';

async function createDevEnv(dir: string, envFile: string): Promise<Record<string, string>> {
  const repo = join(dir, 'repo');
  const dataDir = join(dir, 'runs');
  // Without dev.env, new credentials are made. Runs sealed with the lost integrity key would all be
  // quarantined by the bridge, and a trust store someone enrolled a reviewer in would be emptied:
  // neither is rewritten here. Only an init that stopped before writing dev.env is completed.
  const runs = await readdir(dataDir).catch(() => []);
  if (runs.length > 0)
    throw new UsageError(
      `${envFile} is missing but ${dataDir} holds runs sealed with its integrity key: restore dev.env, or move ${dataDir} away to start anew`,
    );
  await mkdir(join(repo, 'controls'), { recursive: true, mode: 0o700 });
  const store = `${JSON.stringify({ schema: 'harness.review-trust.v1', description: 'development trust store: no reviewer enrolled yet', keys: [] }, null, 2)}\n`;
  // Each git step must exit 0, or an exit code it lists as an answer (a failure is one line, exit 2).
  const git = async (args: string[], answers: number[] = []) => {
    const r = await execa(
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
      { cwd: repo, reject: false },
    );
    if (r.exitCode !== 0 && !answers.includes(r.exitCode ?? -1)) {
      const why = String(r.stderr || r.stdout || r.shortMessage).split('\n')[0];
      throw new UsageError(`git ${args[0]} in ${repo} failed: ${why}`);
    }
    return r.exitCode;
  };
  await git(['init', '-q']);
  const working = await readFile(join(repo, STORE_PATH), 'utf8').catch(() => null);
  const committed = await execa('git', ['show', `HEAD:${STORE_PATH}`], {
    cwd: repo,
    reject: false,
    stripFinalNewline: false,
  });
  if ((working !== null && working !== store) || (committed.exitCode === 0 && committed.stdout !== store))
    throw new UsageError(
      `${envFile} is missing but ${join(repo, STORE_PATH)} is not the empty development store: restore dev.env, or move ${repo} away to start anew`,
    );
  await writeFile(join(repo, STORE_PATH), store);
  await git(['add', STORE_PATH]);
  // A repository left by an earlier, interrupted init may already hold this very store: committed
  // again it would be "nothing to commit". Exit 1 of `diff --cached --quiet` means staged changes.
  const staged = (await git(['diff', '--cached', '--quiet'], [1])) === 1;
  const born = (await git(['rev-parse', '-q', '--verify', 'HEAD'], [1])) === 0;
  if (staged || !born) await git(['commit', '-q', '-m', 'Development review-trust store']);
  const env = {
    HARNESS_BRIDGE_INTEGRITY_KEY: secret(),
    HARNESS_BRIDGE_ACCESS_TOKEN: secret(),
    HARNESS_HUMAN_APPROVAL_TOKEN: secret(),
    [EXPORT_KEY_NAME]: newExportKey(),
    HARNESS_REVIEW_TRUST_SHA256: trustStoreDigest(store),
    HARNESS_REPO_ROOT: repo,
    HARNESS_DATA_DIR: join(dir, 'runs'),
  };
  await atomicWrite(envFile, envText(env, 'credentials'), 0o600);
  return env;
}

/**
 * Each dev file, whether this call made it or kept it, and the shell it is for; then the trust
 * store repository when this call made it. `harness init` and the quick start both print this.
 */
export function describeDevFiles(setup: DevSetup): string {
  const files = setup.files.map((f) => {
    const mode = f.created ? ` (mode 0${(f.mode ?? 0o600).toString(8)})` : '';
    const added = f.added === undefined ? '' : `, added ${f.added} to it`;
    return `${f.created ? 'created' : 'kept'} ${f.path}${mode}${added}: for ${f.role}\n`;
  });
  const repo = setup.created ? `created a trust store repository in ${join(setup.dir, 'repo')}\n` : '';
  return files.join('') + repo;
}

/**
 * How the client shells load their files. The approval shell is a subshell, so the human token
 * ends with it and never reaches the shell the agent commands run in. The commands are spelled
 * `harness`, which `npm link` in the checkout puts on PATH: the one way the README documents (a
 * plain `npx harness` elsewhere would fetch an unrelated npm package). `bridgeUrl` is named only
 * when it is not the default the clients assume.
 */
export function shellHints(setup: DevSetup, bridgeUrl: string = DEFAULT_BRIDGE_URL): string {
  const url = bridgeUrl === DEFAULT_BRIDGE_URL ? '' : ` export HARNESS_BRIDGE_URL=${bridgeUrl};`;
  return (
    `agent shell: set -a; . ${join(setup.dir, 'agent.env')}; set +a;${url} harness emit ...\n` +
    `approval shell: (set -a; . ${join(setup.dir, 'approve.env')}; set +a;${url} harness approve <runId> --owner O --scope S --grant)\n`
  );
}

export function registerInit(program: Command): void {
  program
    .command('init')
    .description(
      'create development credentials and a trust store under ~/.harness/dev (once), and one env file per shell',
    )
    .option('--dir <dir>', 'where to create them', defaultDevDir())
    .action(async (opts: { dir: string }) => {
      // Absolute, so the paths written into dev.env hold from any working directory.
      const setup = await ensureDevSetup(resolve(opts.dir));
      process.stdout.write(describeDevFiles(setup));
      process.stdout.write(`export key ${setup.exportKey.keyId}, public half:\n${setup.exportKey.pem}`);
      process.stdout.write(shellHints(setup));
    });
}
