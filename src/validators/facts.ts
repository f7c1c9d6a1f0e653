import type { RunConfig, RunState } from '../contract/index.js';
import type { BatchClaimer } from './inventory.js';
import type { Problem } from './problem.js';
import type { VerifyResult, VerifyTask } from './signature.js';
import type { VerifiedDigests } from './verified-bytes.js';

/** What every finish-line rule reads: the sealed config and the journal-derived state. */
export interface RunFacts {
  runId: string;
  config: RunConfig;
  state: RunState;
  /**
   * Set on facts rebuilt from a run view that left approvals out (`approvalsOmitted` > 0, the view
   * is cut to 256 KiB): `state.approvals` is then only part of the history, so a rule must not
   * report an approval as absent. The bridge's own facts (the whole journal-derived state) never
   * set it, so its gate decides every waiver.
   */
  approvalsPartial?: boolean;
}

/**
 * When the rules run: `gate` is the completion gate, where every rule holds the run to the live
 * repository (the working tree still the proven commit); `read` re-verifies a completed run, and
 * checks only what the completion bound (artifact bytes, signatures, approvals, the commits the
 * evidence names still existing), never the working tree against the proof: development goes on
 * after a completion (docs/finish-line.md, "Completed runs and further work").
 */
export type FinishLineStage = 'gate' | 'read';

/**
 * What a document rule needs of the run to judge one artifact root: its ID and the node -> artifact
 * map. RunFacts carries both; the evidence writers (`harness route write`, `harness packet write`)
 * hold only these, and run the same checks on what they are about to write.
 */
export interface ArtifactFacts {
  runId: string;
  config: Pick<RunConfig, 'artifactByNode'>;
}

/** A structural rule: pure, synchronous, returns every problem it finds (empty = holds). */
export type StructuralRule = (facts: RunFacts) => Problem[];

/**
 * What the content rules may touch besides the facts: the real artifact root (null when the run
 * has none), the repository root where git and the committed trust store are read, and the sealed
 * review-trust pin. It never carries a credential: validator children hold none (SPEC
 * Authentication rule 6), which `credentialValues?: never` keeps true at compile time.
 */
export interface FinishLineEnv {
  realRoot: string | null;
  repoRoot: string;
  trustPin: string;
  credentialValues?: never;
  /** Absent: `gate`, the stricter stage (a local check, a test). */
  stage?: FinishLineStage;
  /**
   * What the bridge hashed before it started the validators: a rule reads each of these paths
   * through loadJson or verifiedDigest with it, so it decides on exactly those bytes. Absent (a
   * local check with no bridge hash behind it), the rules read what is on disk.
   */
  verified?: VerifiedDigests;
  /**
   * HARNESS_ARTIFACT_MAX_BYTES of the bridge that runs the rules: a file they hash that is larger
   * is a problem, found by its size (unset: no ceiling, as for a local check).
   */
  artifactMaxBytes?: number;
  /**
   * The validator child's worker pool (HashPool): inventory hashing (small files batched into one
   * task) and Ed25519 checks off the main thread. Absent, the rules hash and verify inline.
   */
  workers?: ValidatorWorkers;
}

export interface ValidatorWorkers extends BatchClaimer {
  verifyEd25519(task: VerifyTask): Promise<VerifyResult>;
}

/** A content rule: pure apart from reading the artifact root and git; returns every problem. */
export type ContentRule = (facts: RunFacts, env: FinishLineEnv) => Promise<string[]>;

/** Commissioned assurance applies when the sealed config says so or its adapter requires it. */
export function assuranceRequired(facts: RunFacts): boolean {
  return facts.config.commissioned || facts.config.adapter?.finishLineAssurance === true;
}
