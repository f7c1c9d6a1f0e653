import { mkdir } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import { RUN_DIRECTORY_MAX, SHUTDOWN_GRACE_MS } from '../contract/index.js';
import { acquireLease, acquireMutex, type Lease, StartupError } from '../storage/lease.js';
import type { Database } from '../storage/pg/database.js';
import { databaseUrlSecrets } from '../storage/pg/url.js';
import { StartupReader } from '../storage/startup-read.js';
import type { QuarantineKind, StoreOptions } from '../storage/store.js';
import type { RunStorage } from '../storage/types.js';
import type { ResolvedAdapter } from '../validators/adapter.js';
import { withholdFromChildren } from '../validators/child-environment.js';
import { readCommittedAdapter } from '../validators/committed-adapter.js';
import { useGit } from '../validators/git-executable.js';
import type { ValidatorObserver } from '../validators/runner.js';
import { HashPool } from '../workers/pool.js';
import { RootCheckCache } from '../workers/root-check-cache.js';
import type { BridgeContext, FinishLineGate } from './context.js';
import { type BridgeEnv, readBridgeEnv } from './env.js';
import { type LogDestination, loggerOptions } from './logging.js';
import { BridgeMetrics } from './metrics.js';
import { openFileStore } from './open-file-store.js';
import { RunQueue } from './run-queue.js';
import { validatorCodeDigest } from './runtime-identity.js';
import { checkTrustPin } from './trust-pin.js';

async function drainWithin(queue: RunQueue, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  try {
    await Promise.race([queue.close(), expired]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Why a bridge stopped serving on its own, and the one line that says so: it lost its lease
 * (another bridge took the data directory over, or the lease file was removed), a write or sync
 * of its storage failed, or its listening socket failed after it started.
 */
export interface SelfStop {
  cause: 'lease' | 'storage' | 'listener';
  message: string;
}

export interface RunningBridge {
  app: FastifyInstance;
  ctx: BridgeContext;
  url: string;
  close: () => Promise<void>;
  /**
   * Settles only if this bridge stops serving on its own (SelfStop), once it has closed itself
   * as at shutdown: it admitted nothing more (503 bridge_busy), answered what it had admitted,
   * and released its lease (unless another bridge holds it now).
   */
  stopped: Promise<SelfStop>;
}

export interface StartOptions {
  env?: NodeJS.ProcessEnv;
  logger?: boolean | object;
  /**
   * Where the JSON log lines go (`harness bridge`: stdout), at HARNESS_LOG_LEVEL, scrubbed of the
   * credentials (logging.ts). Takes the place of `logger`.
   */
  logTo?: LogDestination;
  finishLine?: FinishLineGate | null;
  /** Builds the finish-line gate from the checked environment (the CLI passes issue 3's runner). */
  makeFinishLine?: (env: BridgeEnv, validators: ValidatorObserver) => FinishLineGate;
  /**
   * Storage bounds tests make small (commit-log checkpoint size, open-run cache, journal and
   * snapshot ceilings, the run ceiling, which startup's layout check is given too).
   */
  storage?: Pick<
    StoreOptions,
    'checkpointBytes' | 'cacheSize' | 'journalMaxBytes' | 'snapshotMaxBytes' | 'maxRuns'
  > & {
    /**
     * The index file size from which startup reads on a thread of its own (storage/startup-read.ts;
     * tests make it 0). STARTUP_READER_MIN_BYTES otherwise.
     */
    readerMinBytes?: number;
  };
  /**
   * The startup reader the caller made early (`harness bridge` makes it as it starts, so that its
   * thread loads while the bridge's modules do), null for none; absent: made here when the data
   * directory's index is large enough (storage/startup-read.ts).
   */
  reader?: StartupReader | null;
  /** How often the lease is checked and renewed (tests make it short); LEASE_RENEW_MS otherwise. */
  leaseRenewMs?: number;
  /** How long shutdown waits for admitted operations (tests make it short); SHUTDOWN_GRACE_MS otherwise. */
  shutdownGraceMs?: number;
  /**
   * Where storage and recovery report what they did: a run quarantined, a torn tail cut, records
   * rewritten from the commit log, a snapshot skipped. `harness bridge` writes them to stderr.
   */
  log?: (msg: string) => void;
  /** Told each time a run leaves the open-run cache to make room (`harness bridge`'s heap-growth governor). */
  onEvict?: () => void;
}

/**
 * The repository's committed adapter (committed-adapter.ts), read once: a committed change takes
 * effect at the next start, as a trust-store change does. One the bridge cannot apply stops it.
 */
async function repositoryAdapter(repoRoot: string): Promise<ResolvedAdapter | null> {
  try {
    return await readCommittedAdapter(repoRoot);
  } catch (err) {
    throw new StartupError(
      `HARNESS_REPO_ROOT's committed adapter cannot be applied: ${(err as Error).message}`,
    );
  }
}

/**
 * Startup, in the order docs/configuration.md "Startup refusals" gives: credentials, loopback host,
 * numeric ranges, the trust pin's form, git (from then on the only git this process runs), the
 * trust pin against the live and the committed store, the repository's committed adapter, the
 * data directory's creation, then under the recovery mutex the lease, the legacy-layout and
 * sealed-pin check and the store's opening
 * (commit-log replay). Any failure is a StartupError: one line naming what is wrong, exit 2.
 */
/**
 * A write past a file-size limit (`ulimit -f`) raises SIGXFSZ, whose default action ends the
 * process mid-write. Ignored, the write fails with EFBIG instead and takes the storage failure
 * path: the bridge stops, nothing unacknowledged is kept, and a restart recovers.
 */
let fileSizeSignalIgnored = false;
function ignoreFileSizeSignal(): void {
  if (fileSizeSignalIgnored || process.platform === 'win32') return;
  fileSizeSignalIgnored = true;
  process.on('SIGXFSZ', () => {});
}

export async function startBridge(opts: StartOptions = {}): Promise<RunningBridge> {
  const { readerMinBytes, ...storage } = opts.storage ?? {};
  let reader = opts.reader ?? null;
  try {
    const env = readBridgeEnv(opts.env ?? process.env);
    if (env.databaseUrl !== null) {
      await reader?.cancel();
      reader = null;
    } else if (opts.reader === undefined) {
      reader = await StartupReader.forDataDir(env.dataDir, readerMinBytes);
    }
    // It reads the run index while the checks below run; the data directory only under the lease.
    reader?.prepare({
      dataDir: env.dataDir,
      key: env.integrityKey,
      trustPin: env.trustPin,
      maxRuns: storage.maxRuns ?? RUN_DIRECTORY_MAX,
    });
    return await startWith(env, { ...opts, storage }, reader);
  } finally {
    // Done with once the store is open; never left waiting by a start that failed.
    await reader?.cancel();
  }
}

async function startWith(
  env: BridgeEnv,
  opts: StartOptions,
  reader: StartupReader | null,
): Promise<RunningBridge> {
  useGit(env.git.path);
  withholdFromChildren([
    env.integrityKey.toString('utf8'),
    env.accessToken,
    env.humanToken,
    ...(env.exportKey === null ? [] : [env.exportKey.text]),
    ...databaseUrlSecrets(env.databaseUrl),
  ]);
  if (env.git.skipped.length > 0)
    opts.log?.(`git is ${env.git.path}; passed over ${env.git.skipped.join(', ')}`);
  ignoreFileSizeSignal();
  await checkTrustPin(env.repoRoot, env.trustPin);
  const adapter = await repositoryAdapter(env.repoRoot);
  await mkdir(env.dataDir, { recursive: true, mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
    throw new StartupError(
      `HARNESS_DATA_DIR ${env.dataDir} cannot be created as a directory (${err.code ?? 'error'})`,
    );
  });
  // A quarantine found while serving is logged (one found while opening is reported by `log`).
  let onQuarantine: (runId: string, kind: QuarantineKind) => void = () => {};
  // Created before the store, which reports the quarantines it finds while opening; the gauges
  // read the context's queue and pool once there is one.
  let live: BridgeContext | null = null;
  const metrics = new BridgeMetrics({
    queuePending: () => live?.queue.pending ?? 0,
    runQueueMax: () => live?.queue.maxRunPending ?? 0,
    poolBusy: () => live?.pool.busy ?? 0,
    poolQueued: () => live?.pool.pool.queueSize ?? 0,
  });
  const hashPool = new HashPool(
    env.workers,
    { maxBytes: env.artifactMaxBytes, timeoutMs: env.rehashTimeoutMs },
    metrics.pool,
  );
  let port = env.port;
  // The server is built while the store opens (its handlers read the store per request), and
  // listens only once the store is open.
  let opened: RunStorage | null = null;
  const ctx: BridgeContext = {
    env,
    get store(): RunStorage {
      if (opened === null) throw new Error('the run store is not open yet');
      return opened;
    },
    queue: new RunQueue(),
    pool: hashPool,
    metrics,
    finishLine: opts.finishLine ?? opts.makeFinishLine?.(env, metrics.validators) ?? null,
    repositoryAdapter: adapter,
    port: () => port,
    cache: { executions: 0, hits: 0 },
    verdicts: new Map(),
    rootChecks: new RootCheckCache(),
    validatorDigest: validatorCodeDigest,
  };
  live = ctx;
  const logger = opts.logTo
    ? loggerOptions(
        env.logLevel,
        [
          env.accessToken,
          env.humanToken,
          env.integrityKey.toString('utf8'),
          ...(env.exportKey === null ? [] : [env.exportKey.text]),
          ...databaseUrlSecrets(env.databaseUrl),
        ],
        opts.logTo,
      )
    : opts.logger;
  let releaseMutex: () => Promise<void>;
  try {
    releaseMutex = await acquireMutex(env.dataDir);
  } catch (err) {
    await hashPool.close();
    throw err;
  }
  let lease: Lease | null = null;
  let building: Promise<FastifyInstance> | null = null;
  let database: Database | null = null;
  // The first reason to stop wins; the bridge closes itself once (below).
  let stopFor: (why: SelfStop) => void = () => {};
  const stopping = new Promise<SelfStop>((resolve) => {
    stopFor = resolve;
  });
  try {
    lease = await acquireLease(env.dataDir, {
      onLost: (holder) =>
        stopFor({
          cause: 'lease',
          message: `the lease on HARNESS_DATA_DIR ${env.dataDir} is now held by ${holder}, so this bridge stopped serving`,
        }),
      ...(opts.leaseRenewMs === undefined ? {} : { renewMs: opts.leaseRenewMs }),
    });
    // The reader reads while the server's modules load and the server is built: on two cores,
    // the two overlap (storage/startup-read.ts).
    const reading = reader?.read();
    reading?.catch(() => {});
    building = import('./app.js').then(({ buildApp }) =>
      buildApp(ctx, logger === undefined ? {} : { logger }),
    );
    building.catch(() => {});
    const storeOptions = {
      integrityKey: env.integrityKey,
      trustPin: env.trustPin,
      onBatch: (records: number) => metrics.batchDurable(records),
      onQuarantine: (runId: string, kind: QuarantineKind) => {
        metrics.quarantined(kind);
        onQuarantine(runId, kind);
      },
      ...(opts.log ? { log: opts.log } : {}),
      ...(opts.onEvict ? { onEvict: opts.onEvict } : {}),
      ...opts.storage,
    };
    if (env.databaseUrl !== null) {
      // Loaded only for a bridge that uses it: the file store's startup never reads pg.
      const [{ openDatabase }, { PgRunStore }] = await Promise.all([
        import('../storage/pg/database.js'),
        import('../storage/pg/store.js'),
      ]);
      database = await openDatabase({
        url: env.databaseUrl,
        poolSize: env.dbPoolSize,
        log: opts.log ?? (() => {}),
      });
      opened = await PgRunStore.open({ pool: database.pool, ...storeOptions }).catch((err: Error) => {
        throw new StartupError(`HARNESS_DATABASE_URL: the runs cannot be read: ${err.message}`);
      });
    } else {
      opened = await openFileStore(env, lease, storeOptions, (why) => stopFor(why), reading);
    }
  } catch (err) {
    await building?.then((app) => app.close()).catch(() => {});
    await hashPool.close();
    await database?.close();
    await lease?.release();
    throw err;
  } finally {
    await releaseMutex();
  }
  const store = opened;
  const stop = async () => {
    await hashPool.close();
    await store.close();
    await database?.close();
    await lease.release();
  };
  const app = await building.catch(async (err: Error) => {
    await stop();
    throw err;
  });
  onQuarantine = (runId, kind) => app.log.warn({ runId, reason: kind }, 'run quarantined');
  try {
    await app.listen({ host: env.host, port: env.port });
  } catch (err) {
    await stop();
    throw new StartupError(
      `HARNESS_BRIDGE_PORT ${env.port} cannot be bound on ${env.host}: ${(err as Error).message}`,
    );
  }
  // Node would end the process on an 'error' with no listener, answering nothing and keeping the
  // lease; the bridge stops as for a storage failure instead.
  app.server.on('error', (err) =>
    stopFor({ cause: 'listener', message: `the listener failed: ${err.message}` }),
  );
  const address = app.server.address();
  if (address && typeof address === 'object') port = address.port;
  const hostForUrl = env.host.includes(':') ? `[${env.host}]` : env.host;
  const url = `http://${hostForUrl}:${port}`;
  let closed: Promise<void> | null = null;
  const close = () => {
    closed ??= (async () => {
      try {
        // What was admitted is answered first (new requests get 503 bridge_busy meanwhile), within
        // a grace period: a finish-line run can take minutes, and its agent retries the same id.
        await drainWithin(ctx.queue, opts.shutdownGraceMs ?? SHUTDOWN_GRACE_MS);
        await app.close();
        await store.close();
        await database?.close();
        await hashPool.close();
      } finally {
        // Even when closing the store failed: this process writes nothing more, and a lease left
        // behind would hold off the restart (from another host, for LEASE_STALE_MS).
        await lease.release();
      }
    })();
    return closed;
  };
  // Two bridges appending to one run would fork its journal: a bridge whose lease was taken over
  // writes nothing more from its next commit-log write on (the store's fence) and stops serving
  // once the loss is reported, rather than go on writing beside the new holder. A bridge whose
  // storage failed cannot tell what is durable after its last good write, and one whose listening
  // socket failed may answer nobody: each stops, so that its supervisor restarts it (the restart
  // replays the commit log) rather than leave it answering errors until someone does.
  const stopped = stopping.then(async (why) => {
    // The cause is what is reported; closing a bridge whose disk fails may fail too.
    await close().catch(() => {});
    return why;
  });
  return { app, ctx, url, close, stopped };
}
