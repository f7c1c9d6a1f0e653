import { type EventSource, modeOfSource, type NodeId, type RunMode } from './enums.js';

/** Where a run's adapter was resolved from (CONTRACT section 6 / issue 3). */
export interface AdapterRecord {
  /**
   * The root the adapter resolved inside: the artifact root, HARNESS_REPO_ROOT or an adapter root
   * (a file named by the run), or `repository`: the pack committed at HEAD of HARNESS_REPO_ROOT,
   * which the bridge applies to a run that names none (src/validators/committed-adapter.ts).
   */
  rootKind: 'artifact-root' | 'repo-root' | 'adapter-root' | 'repository';
  /** Absolute real path of the adapter file (for `repository`, where the commit holds it). */
  path: string;
  /** SHA-256 of the adapter file bytes. */
  sha256: string;
  finishLineAssurance: boolean;
  /**
   * `finishLineAssurance.ignoredMayChange`: globs of git-ignored paths (from the top of the work
   * tree) that may change after the proof, such as build caches. Absent in configs sealed before
   * it existed, and when the adapter names none.
   */
  ignoredMayChange?: string[];
  /** `repository` only: the repository, the commit the bytes were read from and their path in it. */
  committed?: CommittedAdapter;
}

/** Where a repository's committed adapter was read: `git cat-file blob <commit>:<path>` in `repoRoot`. */
export interface CommittedAdapter {
  repoRoot: string;
  commit: string;
  /** Path from the top level of the work tree: `.harness-pack/project-adapter.json` or `project-adapter.json`. */
  path: string;
}

/**
 * The sealed, write-once run configuration (`run-config.json`). Fields are set at creation; the
 * only later change allowed is filling a null artifactRoot/adapter before the first journal append.
 */
export interface RunConfig {
  schema: 'harness.run-config.v1';
  runId: string;
  createdAt: string;
  artifactRoot: string | null;
  adapter: AdapterRecord | null;
  trustPin: string;
  /** A commissioned run (adapter requires finish-line assurance) can never be downgraded. */
  commissioned: boolean;
  humanTokenDigest: string;
  requiredNodes: NodeId[];
  artifactByNode: Record<NodeId, string>;
  metadata: Partial<Record<'title' | 'task' | 'repo' | 'branch' | 'lane' | 'agent' | 'risk', string>>;
  runMode: RunMode | null;
  eventSource: EventSource | null;
}

/**
 * A run's mode: the one its events set (`run.mode_set`, or its first event), else the one POST /runs
 * gave, where an `eventSource` alone stands for the one mode that admits it. Without that, a run
 * created with a blueprint source would take live events and hold a mode/source pair the seed's
 * table forbids.
 */
export function runModeOf(
  state: { runMode: RunMode | null },
  config: Pick<RunConfig, 'runMode' | 'eventSource'>,
): RunMode | null {
  return (
    state.runMode ?? config.runMode ?? (config.eventSource === null ? null : modeOfSource(config.eventSource))
  );
}
