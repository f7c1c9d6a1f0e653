import { once } from 'node:events';
import { resolve, sep } from 'node:path';
import { type FSWatcher, watch } from 'chokidar';
import type { ArtifactClaim } from '../contract/index.js';
import { RUN_ID_PATTERN } from '../contract/index.js';
import { claimArtifact, resolveRoot } from '../validators/artifact-root.js';
import { type BridgeCall, SourceError } from './client.js';
import { postClaim, readRun, recordedClaims } from './watch-bridge.js';
import { Settler } from './watch-settle.js';
import { WatchTargets } from './watch-targets.js';

export interface WatchOptions {
  runId: string;
  /** The run's artifact root as the user names it (a link to it is resolved once, here). */
  root: string;
  /** Quiet time before a change counts as settled (two looks this far apart must agree). */
  settleMs: number;
  /** First wait before asking an unreachable bridge again; it doubles up to RETRY_MAX_MS. */
  retryMs?: number;
  /** A line for the human (stderr): a refused path (once), an outage, the bridge back. */
  warn: (line: string) => void;
  /** Each event the bridge stored (or answered as a duplicate). */
  posted: (record: {
    seq: number;
    nodeId: string;
    artifact: string;
    sha256: string;
    duplicate: boolean;
  }) => void;
}

export interface WatchSummary {
  runId: string;
  posted: number;
  refused: number;
  /** Settled changes the bridge never acknowledged (it was down when the watcher stopped). */
  undelivered: number;
  /** Why the watcher stopped by itself (the run closed, or the bridge refused the run). */
  error?: SourceError;
}

export interface Watching {
  realRoot: string;
  artifacts: string[];
  /** Resolves once the watcher stopped: by close(), or by itself with `error`. */
  done: Promise<WatchSummary>;
  /** Stops watching; changes seen but not settled are checked, and what is pending is posted. */
  close(): Promise<WatchSummary>;
}

const RETRY_MAX_MS = 5000;
/** How long close() waits for the bridge to take what is pending. */
const CLOSE_MS = 5000;

/**
 * `harness watch`: checks the run and its root with the bridge, then watches the root for the
 * adapter's named artifacts and posts each settled change (see docs/sources.md).
 */
export async function startWatch(call: BridgeCall, opts: WatchOptions): Promise<Watching> {
  if (!RUN_ID_PATTERN.test(opts.runId)) throw new SourceError('the run ID is not canonical', 2);
  let realRoot: string;
  try {
    realRoot = await resolveRoot(resolve(opts.root));
  } catch (err) {
    throw new SourceError(`--root ${opts.root}: ${(err as Error).message}`, 2);
  }
  const run = await readRun(call, opts.runId, realRoot);
  if (run === null) throw new SourceError(`the bridge did not answer for run ${opts.runId}`, 1);
  const targets = new WatchTargets(realRoot, run.nodes);
  const watcher = new ArtifactWatcher(call, opts, targets, recordedClaims(run));
  await watcher.start();
  return {
    realRoot,
    artifacts: targets.paths,
    done: watcher.done,
    close: () => watcher.close(),
  };
}

class ArtifactWatcher {
  /** Path -> the sha256 the run last recorded for it (from the bridge, then from our posts). */
  private known: Map<string, string>;
  /** Path -> its latest settled claim not yet acknowledged, oldest first. */
  private readonly pending = new Map<string, ArtifactClaim>();
  /** Path -> the refusal last reported for it, so each is reported once. */
  private readonly reported = new Map<string, string>();
  /** Path -> the number of its latest check: an older, slower check never overrides it. */
  private readonly checks = new Map<string, number>();
  private readonly settler: Settler;
  private fsw: FSWatcher | null = null;
  private up = true;
  private draining: Promise<void> | null = null;
  private stopped = false;
  private wake: (() => void) | null = null;
  private relook: NodeJS.Timeout | undefined;
  private readonly counts = { posted: 0, refused: 0 };
  private finish!: (s: WatchSummary) => void;
  readonly done = new Promise<WatchSummary>((r) => {
    this.finish = r;
  });

  constructor(
    private readonly call: BridgeCall,
    private readonly opts: WatchOptions,
    private readonly targets: WatchTargets,
    known: Map<string, string>,
  ) {
    this.known = known;
    this.settler = new Settler(
      opts.settleMs,
      (rel) => `${targets.realRoot}${sep}${rel}`,
      (rel) => void this.check(rel),
    );
  }

  async start(): Promise<void> {
    // No link is followed, and only named paths and the directories leading to them are looked
    // into: an unrelated file costs the watcher nothing, however many there are.
    const fsw = watch(this.targets.realRoot, {
      ignored: this.targets.ignores,
      ignoreInitial: true,
      followSymlinks: false,
    });
    this.fsw = fsw;
    fsw.on('all', (_event, path) => {
      const rel = this.targets.relativeOf(path);
      if (rel !== null) for (const p of this.targets.affected(rel)) this.settler.report(p);
    });
    fsw.on('error', (err) => this.warn(`the file watcher: ${(err as Error).message}`));
    await once(fsw, 'ready');
    this.catchUp();
    // A link replaced by a file is not always reported by the watcher (it watched the link's
    // target): a refused path is looked at again every few settle intervals until it is fine.
    this.relook = setInterval(
      () => {
        for (const rel of this.reported.keys()) this.settler.report(rel);
      },
      Math.max(this.opts.settleMs * 4, 250),
    );
  }

  /** Every named path is looked at again and posted if its bytes differ from the run's claim. */
  private catchUp(): void {
    for (const p of this.targets.paths) this.settler.report(p);
  }

  private warn(line: string): void {
    this.opts.warn(line);
  }

  private async check(rel: string): Promise<void> {
    const n = (this.checks.get(rel) ?? 0) + 1;
    this.checks.set(rel, n);
    let claim: ArtifactClaim | null = null;
    let refusal: string | null = null;
    try {
      claim = await claimArtifact(this.targets.realRoot, rel);
    } catch (err) {
      const message = (err as Error).message;
      if (message !== `${rel} does not exist`) refusal = message;
    }
    if (this.checks.get(rel) !== n) return;
    this.pending.delete(rel);
    if (refusal !== null) {
      // A link, a hard link, a path leaving the root, not a regular file: never posted.
      if (this.reported.get(rel) !== refusal) this.warn(`not posted: ${refusal}`);
      this.reported.set(rel, refusal);
      return;
    }
    this.reported.delete(rel);
    if (claim === null || this.known.get(rel) === claim.sha256) return;
    this.pending.set(rel, claim);
    this.drain();
  }

  private drain(): void {
    if (this.draining !== null || !this.up || this.stopped) return;
    this.draining = this.deliver().finally(() => {
      this.draining = null;
    });
  }

  private async deliver(): Promise<void> {
    while (this.up && this.pending.size > 0) {
      const [rel, claim] = this.pending.entries().next().value as [string, ArtifactClaim];
      let recorded: string | null = null;
      for (const nodeId of this.targets.nodesByPath.get(rel) ?? []) {
        const r = await postClaim(this.call, this.opts.runId, nodeId, claim);
        if (r.kind === 'down') {
          this.down();
          return;
        }
        if (r.kind === 'closed') {
          void this.stop(new SourceError(`run ${this.opts.runId}: ${r.why}`, 1));
          return;
        }
        if (r.kind === 'refused') {
          this.counts.refused += 1;
          this.warn(`not posted: ${rel} (node ${nodeId}): ${r.why}`);
          continue;
        }
        this.counts.posted += 1;
        recorded = r.sha256;
        this.opts.posted({ seq: r.seq, nodeId, artifact: rel, sha256: r.sha256, duplicate: r.duplicate });
      }
      if (recorded !== null) this.known.set(rel, recorded);
      // A newer change of the same path, offered while this one was posted, stays pending.
      if (this.pending.get(rel) === claim) this.pending.delete(rel);
    }
  }

  /** The bridge stopped answering: changes keep settling into `pending`; ask it again until it answers. */
  private down(): void {
    if (!this.up) return;
    this.up = false;
    this.warn(`the bridge does not answer; ${this.pending.size} change(s) wait, asking again`);
    void this.reconnect();
  }

  private async reconnect(): Promise<void> {
    let wait = this.opts.retryMs ?? 250;
    while (!this.stopped) {
      await new Promise<void>((r) => {
        const timer = setTimeout(r, wait);
        this.wake = () => {
          clearTimeout(timer);
          r();
        };
      });
      this.wake = null;
      if (this.stopped) return;
      let run: Awaited<ReturnType<typeof readRun>>;
      try {
        run = await readRun(this.call, this.opts.runId, this.targets.realRoot);
      } catch (err) {
        void this.stop(err instanceof SourceError ? err : new SourceError(String(err), 1));
        return;
      }
      if (run !== null) {
        // The run's claims as recorded now (a restarted bridge, or other writers meanwhile):
        // every named path is compared with them again, and only the differences are posted.
        this.known = recordedClaims(run);
        this.up = true;
        this.warn('the bridge answers again: catching up');
        this.catchUp();
        return;
      }
      wait = Math.min(wait * 2, RETRY_MAX_MS);
    }
  }

  /** Stops without posting more; `error` says why when the watcher stops by itself. */
  private async stop(error?: SourceError): Promise<WatchSummary> {
    if (!this.stopped) {
      this.stopped = true;
      this.wake?.();
      clearInterval(this.relook);
      const left = this.settler.close();
      await this.fsw?.close();
      for (const rel of left) if (!this.pending.has(rel)) this.pending.set(rel, unchecked(rel));
      this.finish({
        runId: this.opts.runId,
        ...this.counts,
        undelivered: this.pending.size,
        ...(error === undefined ? {} : { error }),
      });
    }
    return this.done;
  }

  private closing: Promise<WatchSummary> | null = null;

  close(): Promise<WatchSummary> {
    this.closing ??= this.stopped ? this.done : this.flushAndStop();
    return this.closing;
  }

  private async flushAndStop(): Promise<WatchSummary> {
    // Changes seen but not settled yet are taken as they are now, then delivered if the bridge
    // answers within CLOSE_MS; what it does not take is counted as undelivered.
    clearInterval(this.relook);
    const left = this.settler.close();
    await this.fsw?.close();
    await Promise.all(left.map((rel) => this.check(rel)));
    const until = Date.now() + CLOSE_MS;
    while (this.up && (this.draining !== null || this.pending.size > 0) && Date.now() < until) {
      this.drain();
      await Promise.race([this.draining, new Promise((r) => setTimeout(r, 50))]);
    }
    return this.stop();
  }
}

/** A change seen but never looked at (the watcher stopped while the bridge was down). */
const unchecked = (path: string): ArtifactClaim => ({ path, sha256: '', size: -1, mtimeMs: 0 });
