import { createHash } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { INLINE_HASH_MAX_BYTES } from '../contract/index.js';
import type { DescriptorHasher, OpenedArtifact } from '../validators/artifact-root.js';
import { inlineHasher } from '../validators/artifact-root.js';
import type { VerifyResult, VerifyTask } from '../validators/signature.js';
import { DocumentRefsCache } from './document-cache.js';
import { type DocumentScan, NAMES_NOTHING, type ReadDocument } from './document-refs.js';
import { type ClaimResult, type HashResult, hashDescriptor, type WorkerTask } from './tasks.js';

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

export class HashPool {
  readonly pool: Piscina;
  /**
   * `<needles digest>:<content digest>` of bytes scanned and found free of those needles. Equal
   * digests mean equal bytes, so an unchanged artifact is not scanned again (it is re-hashed).
   */
  private readonly cleanScans = new Set<string>();
  /** The references of agent-written documents by content digest (document-cache.ts). */
  readonly documents = new DocumentRefsCache();

  constructor(readonly threads: number = Math.min(4, availableParallelism())) {
    // No thread is kept while nothing is hashed (an idle isolate is about 18 MiB of RSS, which
    // an ingest-only bridge never uses); threads start on demand and leave after 30 s idle.
    this.pool = new Piscina({
      filename: workerFile,
      minThreads: 0,
      maxThreads: threads,
      idleTimeout: 30_000,
    });
  }

  async hashFds(fds: number[], needles: string[] = []): Promise<HashResult[]> {
    return (await this.pool.run({ op: 'hash', fds, needles } satisfies WorkerTask)) as HashResult[];
  }

  /** Hashes and scans for credential values in one pass (inline for small files, pooled for large). */
  async hashAndScan(opened: OpenedArtifact, needles: string[]): Promise<{ sha256: string; leaked: boolean }> {
    const [result] =
      opened.size <= INLINE_HASH_MAX_BYTES
        ? [hashDescriptor(opened.handle.fd, needles)]
        : await this.hashFds([opened.handle.fd], needles);
    if (!result?.ok) throw new Error(`hashing failed: ${result ? result.message : 'no result'}`);
    return { sha256: result.sha256, leaked: result.leaked };
  }

  /** Small files are hashed inline (a thread hop costs more than the hash); large ones in the pool. */
  readonly hasher: DescriptorHasher = async (opened: OpenedArtifact) => {
    if (opened.size <= INLINE_HASH_MAX_BYTES) return inlineHasher(opened);
    const [result] = await this.hashFds([opened.handle.fd]);
    if (!result?.ok) throw new Error(`hashing failed: ${result ? result.message : 'no result'}`);
    return result.sha256;
  };

  /**
   * Opens, checks and hashes many artifacts under one real root: the paths are split into batches
   * (small files share a task, so no per-file thread hop or main-thread syscall round-trip), at
   * least four batches per thread so every thread stays busy. Results come back in path order.
   */
  async claimMany(
    realRoot: string,
    paths: readonly string[],
    opts: {
      needles?: string[];
      /** The digest each path is expected to have (its claim): lets an earlier clean scan stand. */
      expected?: Readonly<Record<string, string>>;
      onProgress?: (done: number) => void;
    } = {},
  ): Promise<ClaimResult[]> {
    const needles = opts.needles ?? [];
    const scanKey = createHash('sha256').update(JSON.stringify(needles)).digest('hex');
    const cleanOf = (path: string): string | null => {
      const want = opts.expected?.[path];
      return needles.length > 0 && want && this.cleanScans.has(`${scanKey}:${want}`) ? want : null;
    };
    const size = Math.max(1, Math.min(CLAIM_BATCH_MAX, Math.ceil(paths.length / (this.threads * 4))));
    const batches: string[][] = [];
    for (let i = 0; i < paths.length; i += size) batches.push(paths.slice(i, i + size));
    let done = 0;
    const results = await Promise.all(
      batches.map(async (batch) => {
        const clean = batch.map(cleanOf);
        const task: WorkerTask = { op: 'claim', root: realRoot, paths: batch, needles, clean };
        const r = (await this.pool.run(task)) as ClaimResult[];
        done += batch.length;
        opts.onProgress?.(done);
        return r;
      }),
    );
    const flat = results.flat();
    if (needles.length > 0) {
      if (this.cleanScans.size > CLEAN_SCANS_MAX) this.cleanScans.clear();
      for (const r of flat) if (r.ok && !r.leaked) this.cleanScans.add(`${scanKey}:${r.sha256}`);
    }
    return flat;
  }

  /** Ed25519 verification in a worker thread; a bad key or signature is a result, never a throw. */
  async verifyEd25519(verify: VerifyTask): Promise<VerifyResult> {
    return (await this.pool.run({ op: 'verify-ed25519', verify } satisfies WorkerTask)) as VerifyResult;
  }

  /** The root's lstat inventory digest, walked off the main thread; null when there is none. */
  async statInventory(realRoot: string): Promise<string | null> {
    const task: WorkerTask = { op: 'stat-inventory', root: realRoot };
    return ((await this.pool.run(task)) as string | null) ?? null;
  }

  /**
   * The artifact paths and commit names each document names (in `paths` order), read, hashed and
   * parsed in pool threads, never on the main thread: a document is agent-written and can be
   * shaped to take a second to parse. Bytes whose digest the cache holds are hashed, not parsed.
   */
  async documentRefs(realRoot: string, paths: readonly string[]): Promise<ReadDocument[]> {
    const scan = async (path: string, known: string[]): Promise<DocumentScan> =>
      (await this.pool.run({
        op: 'document-refs',
        root: realRoot,
        path,
        known,
      } satisfies WorkerTask)) as DocumentScan;
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

  close(): Promise<void> {
    return this.pool.destroy();
  }
}
