import type { RunStorage } from '../storage/types.js';
import type { ResolvedAdapter } from '../validators/adapter.js';
import type { FinishLineEnv, RunFacts } from '../validators/facts.js';
import type { HashPool } from '../workers/pool.js';
import type { RootCheckCache } from '../workers/root-check-cache.js';
import type { BridgeEnv } from './env.js';
import type { BridgeMetrics } from './metrics.js';
import type { RunQueue } from './run-queue.js';

/** What checking a run's artifacts found (server/artifact-check.ts), kept whole by `rootChecks`. */
export interface ArtifactCheck {
  /** Current digest of every path checked that resolved. */
  digests: Map<string, string>;
  /** Paths checked that do not exist (no claim or document names them; otherwise a problem). */
  absent: Set<string>;
  /** The unclaimed paths checked by name: the referenced documents and the validators' by-name inputs. */
  byName: string[];
  /** The unclaimed paths checked because a document names them. */
  named: string[];
  problems: string[];
}

/** Issue 3's artifact-content validators plug in here; the structural rules always run first. */
export type FinishLineGate = (facts: RunFacts, env: FinishLineEnv) => Promise<string[]>;

export interface BridgeContext {
  env: BridgeEnv;
  store: RunStorage;
  queue: RunQueue;
  pool: HashPool;
  /** Prometheus metrics (GET /metrics), updated in place where each thing happens. */
  metrics: BridgeMetrics;
  finishLine: FinishLineGate | null;
  /**
   * The adapter committed at HEAD of HARNESS_REPO_ROOT, read once at startup (null when the
   * repository commits none): the default of every run that names no adapter, and the floor of
   * every one that does (run-setup.ts).
   */
  repositoryAdapter: ResolvedAdapter | null;
  /** Port actually bound (HARNESS_BRIDGE_PORT=0 picks one); read by the Host check. */
  port: () => number;
  cache: { executions: number; hits: number };
  /** Finish-line verdicts of completed runs by input digest (see reverify.ts). */
  verdicts: Map<string, string[]>;
  /** Completed-run reads' artifact checks of unchanged roots (artifact-check.ts). */
  rootChecks: RootCheckCache<ArtifactCheck>;
  /** The identity of the validator code a completion seals and a read compares (runtime-identity.ts). */
  validatorDigest: () => Promise<string>;
}
