import type {
  ArtifactClaim,
  JournalEntry,
  RecordSeal,
  RunConfig,
  RunState,
  RunSummary,
  StoredEvent,
} from '../contract/index.js';
import type { IdIndex } from './id-index.js';

/** What the server reads of an open run's journal, whichever store holds it. */
export interface RunJournal {
  /** Records appended (durable or on their way). */
  readonly count: number;
  /** At its byte ceiling: the next record might not fit (409 run_history_full). */
  readonly full: boolean;
  /** The MAC of the newest record, or the config's MAC before the first. */
  readonly headMac: string;
  /** Why appends and reads of this journal fail now (its records since then are not trusted). */
  readonly broken: Error | null;
  /** Resolves once every record appended so far is durable or has failed. */
  idle(): Promise<void>;
}

/** A run opened and fully authenticated: the in-memory state every append and read uses. */
export interface OpenRun<J extends RunJournal = RunJournal> {
  runId: string;
  config: RunConfig;
  state: RunState;
  journal: J;
  /** Event id -> seq candidates, for idempotent repeats (confirmed against the journal). */
  ids: IdIndex;
  /** Operations currently holding the run; a pinned run is never evicted. */
  pins: number;
}

/** An append: the entry, a promise settled once it is durable, and the event's canonical JSON as stored. */
export interface Appended {
  entry: JournalEntry;
  durable: Promise<void>;
  eventJson: string;
}

export interface QuarantineInfo {
  reasons: string[];
  since: string;
}

export type LoadResult<R extends OpenRun = OpenRun> =
  | { kind: 'open'; run: R }
  | { kind: 'quarantined'; runId: string; createdAt: string; quarantine: QuarantineInfo }
  | { kind: 'missing' };

/**
 * Everything the server needs from run storage. The file-backed RunStore implements it; a hosted
 * database could implement the same surface (append must stay O(1) and report durability as a
 * promise; reads re-authenticate what they return). Callers serialize operations per run and pin
 * an open run between `load` and `release`.
 */
export interface RunStorage<R extends OpenRun = OpenRun> {
  readonly size: number;
  /** Why storage stopped accepting reads and writes (a failed commit-log write or sync), if it did. */
  readonly failure: Error | null;
  /** The byte ceilings on each run's journal and snapshot, and the most runs storage holds. */
  readonly ceilings: { journalMaxBytes: number; snapshotMaxBytes: number; maxRuns: number };
  has(runId: string): boolean;
  /**
   * Brings the list of runs up to date before a page of it is read, where other writers can add
   * runs (several bridges sharing a database); the file store, whose data directory only its own
   * bridge writes, has none.
   */
  refresh?(): Promise<void>;
  /** Run IDs in creation order, for stable paging. */
  page(offset: number, limit: number): string[];
  /**
   * Opens a run and pins it (`release` unpins it). `write`: the caller may append to it, so a
   * store shared by several bridges first makes this one the run's only writer.
   */
  load(runId: string, intent?: 'read' | 'write'): Promise<LoadResult<R>>;
  /**
   * A run's list summary as of its latest durable record, kept without the run open; null when
   * only opening the run can tell (quarantined, or not summarized since this start).
   */
  indexedSummary(runId: string): RunSummary | null;
  release(run: R): void;
  /**
   * The creation time for a new run's config: now, but later than every run created before it,
   * so creation order is the order of `createdAt` and survives a restart.
   */
  nextCreatedAt(): string;
  /** Creates a run; past the run ceiling it throws RunCeilingError and writes nothing. */
  create(config: RunConfig): Promise<R>;
  /** Removes a run created for a first event that was then refused (nothing appended). */
  discardUnused(run: R): Promise<void>;
  /** Fills a write-once config field; only before the run's first append. */
  sealConfig(run: R, config: RunConfig): Promise<void>;
  /** The entry, a promise settled once it is durable, and the event's canonical JSON as stored. */
  append(run: R, event: StoredEvent, claim: ArtifactClaim | null, seal?: RecordSeal | null): Appended;
  read(run: R, from: number, to: number): Promise<JournalEntry[]>;
  quarantine(runId: string, reason: string): QuarantineInfo;
  /** Quarantines a completed run for drift and records it durably, so a restart keeps it. */
  quarantineForDrift(runId: string, reasons: string[]): Promise<void>;
  quarantineOf(runId: string): QuarantineInfo | undefined;
  close(): Promise<void>;
}
