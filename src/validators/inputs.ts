import type { FinishLineStage, RunFacts } from './facts.js';

/**
 * What a content rule reads under the artifact root and in the git repository (HARNESS_REPO_ROOT),
 * declared beside the rule. The completed-run verdict cache binds exactly these inputs
 * (src/server/verdict-inputs.ts), so a rule that reads something it does not declare could be
 * answered from a stale verdict: test/finish-line-inputs.test.ts runs every rule with its file
 * accesses and git commands recorded and fails on any read outside the declaration.
 */
export interface RuleInputs {
  /** Paths opened by fixed or configured name, present or not (an absent file is an input too). */
  files: readonly string[];
  /** Documents among `files` whose artifact references (`{path, sha256}` objects) the rule opens. */
  documents?: readonly string[];
  /** The rule lists the whole root (the review-signature inventory). */
  enumeratesRoot?: boolean;
  /**
   * The rule reads every file the bridge's artifact check verified (the secret scan), each held to
   * the digest the check took (verified-bytes.ts): the verdict cache key binds those digests.
   */
  verifiedFiles?: boolean;
  /** What the rule reads from the git repository; absent when it runs no git. */
  repository?: RepositoryReads;
}

/** The repository reads a rule makes, each bound by the state that decides its answers. */
export interface RepositoryReads {
  /** The review-trust store committed at HEAD (its path depends on `.harness-pack`). */
  trustStore?: boolean;
  /**
   * The working tree compared with a commit, the artifact root left out (changesSince). Declared
   * for the gate only: a completed-run read does not compare it, so the key does not bind it.
   */
  workingTree?: boolean;
  /** Documents among `files` whose full commit names the rule looks up (existence, ancestry). */
  commitsNamedIn?: readonly string[];
}

/** What a rule reads at `stage` (a rule reads less when re-verifying a completed run). */
export type InputsOf = (facts: RunFacts, stage: FinishLineStage) => RuleInputs;

/** The union of the inputs of every rule that runs for a run. */
export interface ValidatorInputs {
  files: string[];
  documents: string[];
  enumeratesRoot: boolean;
  verifiedFiles: boolean;
  repository: { trustStore: boolean; workingTree: boolean; commitsNamedIn: string[] };
}

export function mergeInputs(list: readonly RuleInputs[]): ValidatorInputs {
  const files = new Set<string>();
  const documents = new Set<string>();
  const commitsNamedIn = new Set<string>();
  let enumeratesRoot = false;
  let verifiedFiles = false;
  let trustStore = false;
  let workingTree = false;
  for (const i of list) {
    for (const f of i.files) files.add(f);
    for (const d of i.documents ?? []) documents.add(d);
    for (const d of i.repository?.commitsNamedIn ?? []) commitsNamedIn.add(d);
    enumeratesRoot ||= i.enumeratesRoot === true;
    verifiedFiles ||= i.verifiedFiles === true;
    trustStore ||= i.repository?.trustStore === true;
    workingTree ||= i.repository?.workingTree === true;
  }
  return {
    files: [...files].sort(),
    documents: [...documents].sort(),
    enumeratesRoot,
    verifiedFiles,
    repository: { trustStore, workingTree, commitsNamedIn: [...commitsNamedIn].sort() },
  };
}
