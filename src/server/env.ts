import type { KeyObject } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { isAbsolute, resolve } from 'node:path';
import {
  ARTIFACT_MAX_BYTES,
  canonicalTrustPin,
  MAX_EVENTS_PER_RUN,
  REHASH_TIMEOUT_MS,
} from '../contract/index.js';
import { isLoopbackHost, unbracketed } from '../contract/loopback.js';
import { exportKeyId, parseExportKey } from '../storage/bundle-seal.js';
import { StartupError } from '../storage/lease.js';
import { parseDatabaseUrl } from '../storage/pg/url.js';
import { adapterRootsFromEnv } from '../validators/adapter.js';
import { EXPORT_KEY_NAME } from '../validators/child-environment.js';
import { GitExecutableError, type ResolvedGit, resolveGit } from '../validators/git-executable.js';
import { readCredentials, readOptionalCredential } from './credentials.js';
import { DEFAULT_DATA_DIR } from './data-dir.js';
import { LOG_LEVELS, type LogLevel } from './logging.js';

/** Everything the bridge reads from its environment, checked once at startup (CONTRACT 2 and 7). */
export interface BridgeEnv {
  host: string;
  port: number;
  dataDir: string;
  repoRoot: string;
  adapterRoots: string[];
  integrityKey: Buffer;
  accessToken: string;
  humanToken: string;
  /**
   * HARNESS_BRIDGE_EXPORT_KEY (or its _FILE, or a systemd credential): the Ed25519 key that signs
   * run bundles (GET /runs/:id/export), its text as given and its ID; null: exports are refused.
   */
  exportKey: { privateKey: KeyObject; keyId: string; text: string } | null;
  trustPin: string;
  workers: number;
  validatorConcurrency: number;
  maxEventsPerRun: number;
  /** HARNESS_ARTIFACT_MAX_BYTES: the largest artifact claimed or re-verified. */
  artifactMaxBytes: number;
  /** HARNESS_REHASH_TIMEOUT_MS: how long hashing one file in the pool may take. */
  rehashTimeoutMs: number;
  /** HARNESS_LOG_LEVEL: the least severe JSON log line written (logging.ts). */
  logLevel: LogLevel;
  /** The git the bridge and its validators run (HARNESS_GIT, or the first trusted one on PATH). */
  git: ResolvedGit;
  /**
   * HARNESS_DATABASE_URL: the PostgreSQL database that holds the runs, as given (it may carry a
   * password: show it only through `redactDatabaseUrl`); null: the file store in dataDir.
   */
  databaseUrl: string | null;
  /** HARNESS_DB_POOL: the most connections the PostgreSQL store's pool opens. */
  dbPoolSize: number;
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new StartupError(`${name} must be an integer from ${min} to ${max}`);
  }
  return Number(raw);
}

/**
 * The environment checks, in the order docs/configuration.md "Startup refusals" gives: credentials,
 * loopback host, numeric ranges, the log level, the database URL's form, the trust pin's presence
 * and form, then git (startBridge then
 * checks the pin against the live and committed store, which asks that git). The first failure
 * is the one reported.
 */
export function readBridgeEnv(env: NodeJS.ProcessEnv = process.env): BridgeEnv {
  const [integrityKey, accessToken, humanToken] = readCredentials(env);
  const exportKey = readExportKey(env);
  // `[::1]`, as a URL writes it, is the address ::1: listen() takes it without brackets.
  const host = unbracketed(env['HARNESS_BRIDGE_HOST'] || '127.0.0.1');
  if (!isLoopbackHost(host)) {
    throw new StartupError('HARNESS_BRIDGE_HOST must be a loopback address (127.0.0.0/8, ::1 or localhost)');
  }
  const cores = availableParallelism();
  const port = integer(env, 'HARNESS_BRIDGE_PORT', 8787, 0, 65535);
  const workers = integer(env, 'HARNESS_WORKERS', Math.min(4, cores), 1, 64);
  const validatorConcurrency = integer(env, 'HARNESS_VALIDATOR_CONCURRENCY', cores, 1, 64);
  const maxEventsPerRun = integer(
    env,
    'HARNESS_MAX_EVENTS_PER_RUN',
    MAX_EVENTS_PER_RUN.default,
    MAX_EVENTS_PER_RUN.min,
    MAX_EVENTS_PER_RUN.max,
  );
  const artifactMaxBytes = integer(
    env,
    'HARNESS_ARTIFACT_MAX_BYTES',
    ARTIFACT_MAX_BYTES.default,
    ARTIFACT_MAX_BYTES.min,
    ARTIFACT_MAX_BYTES.max,
  );
  const rehashTimeoutMs = integer(
    env,
    'HARNESS_REHASH_TIMEOUT_MS',
    REHASH_TIMEOUT_MS.default,
    REHASH_TIMEOUT_MS.min,
    REHASH_TIMEOUT_MS.max,
  );
  const dbPoolSize = integer(env, 'HARNESS_DB_POOL', 4, 1, 64);
  const logLevel = env['HARNESS_LOG_LEVEL'] || 'warn';
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new StartupError(`HARNESS_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  }
  const databaseUrl = parseDatabaseUrl(env['HARNESS_DATABASE_URL']);
  const rawPin = env['HARNESS_REVIEW_TRUST_SHA256'] ?? '';
  if (rawPin === '') throw new StartupError('HARNESS_REVIEW_TRUST_SHA256 is missing');
  const trustPin = canonicalTrustPin(rawPin);
  if (trustPin === null) {
    throw new StartupError('HARNESS_REVIEW_TRUST_SHA256 must be 64 hexadecimal characters');
  }
  let git: ResolvedGit;
  try {
    git = resolveGit(env);
  } catch (err) {
    throw err instanceof GitExecutableError ? new StartupError(err.message) : err;
  }
  const absolute = (name: string, fallback: string) => {
    const v = env[name] || fallback;
    return isAbsolute(v) ? v : resolve(v);
  };
  return {
    host,
    port,
    dataDir: absolute('HARNESS_DATA_DIR', DEFAULT_DATA_DIR),
    repoRoot: absolute('HARNESS_REPO_ROOT', process.cwd()),
    adapterRoots: adapterRootsFromEnv(env),
    integrityKey: Buffer.from(integrityKey, 'utf8'),
    accessToken,
    humanToken,
    exportKey,
    trustPin,
    workers,
    validatorConcurrency,
    maxEventsPerRun,
    artifactMaxBytes,
    rehashTimeoutMs,
    logLevel: logLevel as LogLevel,
    git,
    databaseUrl,
    dbPoolSize,
  };
}

function readExportKey(env: NodeJS.ProcessEnv): BridgeEnv['exportKey'] {
  const text = readOptionalCredential(env, EXPORT_KEY_NAME);
  if (text === null) return null;
  try {
    const privateKey = parseExportKey(text, 'private');
    return { privateKey, keyId: exportKeyId(privateKey), text };
  } catch (err) {
    throw new StartupError(`${EXPORT_KEY_NAME} ${(err as Error).message}`);
  }
}
