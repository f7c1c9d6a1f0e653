import { createHash } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { INLINE_HASH_MAX_BYTES, SMALL_HASH_MAX_BYTES } from '../contract/index.js';
import type { DescriptorHasher } from '../validators/artifact-root.js';
import { ArtifactError, hashTimedOut, inlineHasher } from '../validators/artifact-root.js';
import type { VerifyResult, VerifyTask } from '../validators/signature.js';
import { DigestCache } from './digest-cache.js';
import { DocumentRefsCache } from './document-cache.js';
import { type DocumentScan, NAMES_NOTHING, type ReadDocument } from './document-refs.js';
import { semaphore } from './semaphore.js';
import { combineWalk, STAT_TOP_LEVELS, type StatInventory, type StatWalkPart } from './stat-inventory.js';
import { type ClaimResult, type HashResult, TIMED_OUT, type WorkerTask } from './tasks.js';

export type { DocumentRefs } from './document-refs.js';
export type { ClaimResult } from './tasks.js';

/** At most this many paths per claim task; fewer when that leaves threads idle. */
const CLAIM_BATCH_MAX = 64;
const CLEAN_SCANS_MAX = 100_000;

/**
 * The main-thread side of the worker pool. The worker file is resolved with the caller's own
 * extension so the same code runs from dist/*.js and from .ts sources under a loader.
 */
const self = fileURLToPath(import.meta.url);
const workerFile = new URL(`./tasks${extname(self)}`, import.meta.url).href;

/** What the bridge bounds its hashing by; a pool without them (offline tools) hashes anything. */
export interface HashLimits {
  /** HARNESS_ARTIFACT_MAX_BYTES: larger files are refused by their size, unread. */
  maxBytes?: number;
  /** HARNESS_REHASH_TIMEOUT_MS: hashing one file in a pool thread may take this long. */
  timeoutMs?: number;
}

/** Told of every pool task as it settles (the bridge's metrics); nothing else depends on it. */
export interface PoolObserver {
  taskDone(seconds: number): void;
}

/** What claimMany and claimEach are told beyond the paths. */
export interface ClaimOptions {
  needles?: string[];
  /** The digest each path is expected to have (its claim): lets an earlier clean scan stand. */
  expected?: Readonly<Record<string, string>>;
  /** Take a digest from the digest cache when the file's identity is unchanged. */
  cached?: boolean;
  onProgress?: (done: number) => void;
}

export class HashPool {
  readonly pool: Piscina;
  /**
   * The pool has one thread more than `threads`, and files over SMALL_HASH_MAX_BYTES go through
   * this gate, which lets at most `threads` of them hash at once: whatever large files any run
   * claims, one thread is left to the small files (most artifacts, every document), so a run's
   * huge artifact does not hold back another run's events and reads.
   */
  private readonly large: ReturnType<typeof semaphore>;
  /** Digests of files by identity, for completed-run reads (digest-cache.ts). */
  readonly digests = new DigestCache();
  /**
   * `<needles digest>:<content digest>` of bytes scanned and found free of those needles. Equal
   * digests mean equal bytes, so an unchanged artifact is not scanned again (it is re-hashed).
   */
  private readonly cleanScans = new Set<string>();
  /** The references of agent-written documents by content digest (document-cache.ts). */
  readonly documents = new DocumentRefsCache();
  /** Tasks handed to the pool and not yet settled (running or queued in it). */
  private inFlight = 0;

  constructor(
    readonly threads: number = Math.min(4, availableParallelism()),
    readonly limits: HashLimits = {},
    private readonly observer: PoolObserver | null = null,
  ) {
    // No thread is kept while nothing is hashed (an idle isolate is about 18 MiB of RSS, which
    // an ingest-only bridge never uses); threads start on demand and leave after 30 s idle.
    this.pool = new Piscina({
      filename: workerFile,
      minThreads: 0,
      maxThreads: threads + 1,
      idleTimeout: 30_000,
    });
    this.large = semaphore(threads);
  }

  /**
   * Every task goes through here: the count in flight and, with an observer, each task's time from
   * submission to result (its wait in the pool's queue included) are kept as it settles.
   */
  private async submit<T>(task: WorkerTask): Promise<T> {
    this.inFlight++;
    const startedAt = performance.now();
    try {
      return (await this.pool.run(task)) as T;
    } finally {
      this.inFlight--;
      this.observer?.taskDone((performance.now() - startedAt) / 1000);
    }
  }

  /** Runs a task in the pool; one hashing a file over SMALL_HASH_MAX_BYTES in the large files' share. */
  private runTask<T>(task: WorkerTask, large: boolean): Promise<T> {
    const run = () => this.submit<T>(task);
    return large ? this.large(run) : run();
  }

  /**
   * Small files are hashed inline (a thread hop costs more than the hash); large ones in the pool,
   * within the time bound: a file that takes longer is refused like one that cannot be opened.
   */
  readonly hasher: DescriptorHasher = async (opened, relPath) => {
    if (opened.size <= INLINE_HASH_MAX_BYTES) return inlineHasher(opened, relPath);
    const { timeoutMs } = this.limits;
    const task: WorkerTask = { op: 'hash', fds: [opened.handle.fd], ...(timeoutMs ? { timeoutMs } : {}) };
    const [result] = await this.runTask<HashResult[]>(task, opened.size > SMALL_HASH_MAX_BYTES);
    if (result?.ok) return result.sha256;
    if (result?.code === TIMED_OUT) throw new ArtifactError(hashTimedOut(relPath, timeoutMs ?? 0));
    throw new Error(`hashing failed: ${result ? result.message : 'no result'}`);
  };

  /**
   * Opens, checks and hashes many artifacts under one real root: the paths are split into batches
   * (small files share a task, so no per-file thread hop or main-thread syscall round-trip), at
   * least four batches per thread so every thread stays busy. A file over SMALL_HASH_MAX_BYTES is
   * left by its batch and hashed in a task of its own, in the large files' share. With `cached`
   * (completed-run reads), a file whose identity is the one it was last hashed with is not read
   * again (digest-cache.ts). Results come back in path order.
   */
  async claimMany(
    realRoot: string,
    paths: readonly string[],
    opts: ClaimOptions = {},
  ): Promise<ClaimResult[]> {
    const results: ClaimResult[][] = [];
    await this.claimEach(realRoot, paths, opts, (batch, at) => {
      results[at] = batch;
    });
    return results.flat();
  }

  /**
   * claimMany without keeping the results: `each` gets every batch's results (in `paths` order
   * within it, `at` its place among the batches) as it is done, so a check of a million paths
   * keeps what it folds them into, not a million result objects.
   */
  async claimEach(
    realRoot: string,
    paths: readonly string[],
    opts: ClaimOptions,
    each: (results: ClaimResult[], at: number) => void,
  ): Promise<void> {
    const needles = opts.needles ?? [];
    const scanKey = createHash('sha256').update(JSON.stringify(needles)).digest('hex');
    const knownOf = (path: string) => (opts.cached ? this.digests.get(realRoot, path) : null);
    const cleanOf = (path: string, known: string | undefined): string | null => {
      if (needles.length === 0) return null;
      for (const want of [known, opts.expected?.[path]])
        if (want && this.cleanScans.has(`${scanKey}:${want}`)) return want;
      return null;
    };
    const claim = async (batch: string[], small: boolean): Promise<ClaimResult[]> => {
      const known = batch.map(knownOf);
      const sentAt = Date.now();
      const task: WorkerTask = {
        op: 'claim',
        root: realRoot,
        paths: batch,
        needles,
        clean: batch.map((path, i) => cleanOf(path, known[i]?.sha256)),
        known,
        ...this.limits,
        ...(small ? { deferAbove: SMALL_HASH_MAX_BYTES } : {}),
      };
      const results = await this.runTask<ClaimResult[]>(task, !small);
      for (const [i, r] of results.entries())
        if (r.ok) r.hashedAt = r.cached ? (known[i]?.hashedAt ?? sentAt) : sentAt;
      return results;
    };
    const size = Math.max(1, Math.min(CLAIM_BATCH_MAX, Math.ceil(paths.length / (this.threads * 4))));
    const batches: string[][] = [];
    for (let i = 0; i < paths.length; i += size) batches.push(paths.slice(i, i + size));
    let done = 0;
    await Promise.all(
      batches.map(async (batch, at) => {
        const r = await claim(batch, true);
        // Files over the small files' share are hashed on their own, each as a task of its own.
        const all = r.some((one) => !one.ok && one.deferred)
          ? await Promise.all(
              r.map(async (one) =>
                !one.ok && one.deferred ? ((await claim([one.path], false))[0] ?? one) : one,
              ),
            )
          : r;
        for (const one of all) if (one.ok) this.digests.record(realRoot, one);
        if (needles.length > 0) {
          if (this.cleanScans.size > CLEAN_SCANS_MAX) this.cleanScans.clear();
          for (const one of all) if (one.ok && !one.leaked) this.cleanScans.add(`${scanKey}:${one.sha256}`);
        }
        done += batch.length;
        opts.onProgress?.(done);
        each(all, at);
      }),
    );
  }

  /** Ed25519 verification in a worker thread; a bad key or signature is a result, never a throw. */
  async verifyEd25519(verify: VerifyTask): Promise<VerifyResult> {
    return this.submit<VerifyResult>({ op: 'verify-ed25519', verify } satisfies WorkerTask);
  }

  /**
   * The root's lstat inventory (stat-inventory.ts), walked off the main thread: the top levels in
   * one task, the directories below them split over the threads. Null when there is none.
   */
  async statInventory(realRoot: string): Promise<StatInventory | null> {
    const startedAt = Date.now();
    const walk = (dirs: string[], levels: number) =>
      this.submit<StatWalkPart | null>({
        op: 'stat-walk',
        root: realRoot,
        dirs,
        levels,
      } satisfies WorkerTask);
    const top = await walk([''], STAT_TOP_LEVELS);
    if (top === null) return null;
    const { frontier } = top;
    const size = Math.max(1, Math.ceil(frontier.length / ((this.threads + 1) * 2)));
    const chunks: string[][] = [];
    for (let i = 0; i < frontier.length; i += size) chunks.push(frontier.slice(i, i + size));
    const below = await Promise.all(chunks.map((c) => walk(c, Number.POSITIVE_INFINITY)));
    if (below.some((p) => p === null)) return null;
    return combineWalk(top, below as StatWalkPart[], startedAt);
  }

  /**
   * The artifact paths and commit names each document names (in `paths` order), read, hashed and
   * parsed in pool threads, never on the main thread: a document is agent-written and can be
   * shaped to take a second to parse. Bytes whose digest the cache holds are hashed, not parsed.
   */
  async documentRefs(realRoot: string, paths: readonly string[]): Promise<ReadDocument[]> {
    const scan = async (path: string, known: string[]): Promise<DocumentScan> =>
      this.submit<DocumentScan>({
        op: 'document-refs',
        root: realRoot,
        path,
        known,
      } satisfies WorkerTask);
    return Promise.all(
      paths.map(async (path) => {
        let r = await scan(path, this.documents.digests());
        if (r.sha256 !== null && r.refs === null) {
          const cached = this.documents.get(r.sha256);
          if (cached) return { ...cached, sha256: r.sha256 };
          r = await scan(path, []); // evicted while the task ran: parse it after all
        }
        if (r.sha256 !== null && r.refs !== null) this.documents.set(r.sha256, r.refs);
        return { ...(r.refs ?? NAMES_NOTHING), sha256: r.sha256 };
      }),
    );
  }

  get figures(): { threads: number; queued: number; completed: number } {
    return { threads: this.pool.threads.length, queued: this.pool.queueSize, completed: this.pool.completed };
  }

  /**
   * Threads running a task now: the tasks in flight less those still in the pool's queue (never
   * more than the threads the pool has started).
   */
  get busy(): number {
    return Math.max(0, Math.min(this.pool.threads.length, this.inFlight - this.pool.queueSize));
  }

  close(): Promise<void> {
    return this.pool.destroy();
  }
}
