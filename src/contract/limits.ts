/** Numeric ceilings (SPEC "Limits", CONTRACT sections 2-4). */
export const RUN_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
export const RUN_ID_PATTERN_SOURCE = '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$';
export const EVENT_ID_MAX = 512;
export const EVENT_MAX_BYTES = 16 * 1024;
export const CREATE_RUN_MAX_BYTES = 16 * 1024;
export const TEXT_FIELD_MAX = 4096;
export const PATH_FIELD_MAX = 1024;
export const RUNS_LIMIT = { min: 1, max: 50, default: 25 } as const;
export const EVENTS_LIMIT = { min: 1, max: 200, default: 100 } as const;
/** Cursors have no upper bound of their own (SPEC Limits): any safe integer; past the end, a page is empty. */
export const CURSOR_MAX = Number.MAX_SAFE_INTEGER;

/**
 * A query value as the bridge reads it (CONTRACT 4): plain decimal digits naming a safe integer,
 * else NaN. The UI proxy checks cursors with the same rule, so it refuses exactly what the bridge
 * would refuse and forwards everything else.
 */
export function queryInteger(value: string): number {
  const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  return Number.isSafeInteger(n) ? n : Number.NaN;
}
export const RESPONSE_MAX_BYTES = 1024 * 1024;
/**
 * A run view's share of the response: its approvals list (every pending approval, oldest first,
 * then the newest decided ones) and its completion-preview problems are cut to these, so the view
 * stays far enough under RESPONSE_MAX_BYTES for an event page, whatever the run's history.
 */
export const VIEW_APPROVALS_MAX_BYTES = 256 * 1024;
export const VIEW_PROBLEMS_MAX_BYTES = 64 * 1024;
/**
 * The completion preview's next steps (each a problem, its node and the command or document that
 * clears it): the first that fit in this many bytes of JSON are shown.
 */
export const VIEW_STEPS_MAX_BYTES = 128 * 1024;
/**
 * A run view's node and artifact texts (`skipReason`, `failureReason`, `recoveryPath`: three per
 * node, three per artifact record) share this many bytes of JSON. Each is at most one event's
 * 16 KiB, but 14 nodes (a skip reason kept beside a later failure) and 15 artifact records hold
 * 87 of them, some 700 KiB; past the share the longest are shortened alike, with a marker, and
 * `textsShortened` counts them. The journal keeps every text whole.
 */
export const VIEW_TEXTS_MAX_BYTES = 256 * 1024;
/**
 * The `problems` of a failure envelope and the `quarantine.reasons` of a view are cut to this, with
 * one line saying how many more there are: a refused completion or a drifted run can name as many
 * problems as its documents name paths.
 */
export const PROBLEMS_MAX_BYTES = 64 * 1024;
/** Reasons a quarantine keeps (the first ones, then one line counting the rest). */
export const QUARANTINE_REASONS_MAX = 100;
/**
 * Artifact paths the packet, review and rca documents may name together (each a `{path, sha256}`
 * reference, CONTRACT 6): a review's signed inventory names every file of the root. Past it, the
 * privacy check reports one problem and checks none of them. The references are read without
 * building the documents' values (src/workers/json-refs.ts) and checked without keeping a result
 * per path (HashPool.claimEach). Documents within DOCUMENT_MAX_BYTES name fewer than this
 * together (some 300000 each at the shortest reference), so today that cap is what binds.
 */
export const NAMED_PATHS_MAX = 1_000_000;
/**
 * Past this many named paths, the completed-run verdict cache key of a run whose rules do not
 * enumerate the root binds the root's lstat inventory (one walk in a pool thread) instead of each
 * named path and directory one by one on the main thread (src/server/verdict-inputs.ts).
 */
export const BIND_BY_NAME_MAX = 10_000;
/** The verdict cache binds at most this many distinct commit names (an RCA names two, a proof one). */
export const COMMIT_NAMES_MAX = 4;
/**
 * Artifact JSON documents are capped: neither a validator child nor the pool thread that reads
 * a document's references (src/workers/document-refs.ts) must be exhausted by one file.
 */
export const DOCUMENT_MAX_BYTES = 8 * 1024 * 1024;
export const CREDENTIAL_MIN_BYTES = 32;

/**
 * SPEC Limits "Trust pin: 64 hexadecimal characters": either case is hexadecimal. The canonical
 * form is lowercase, the form sealed into run configs and compared with store digests, so a pin
 * typed in capitals still matches runs created under its lowercase spelling. Null when malformed.
 */
export function canonicalTrustPin(value: string): string | null {
  return /^[0-9a-fA-F]{64}$/.test(value) ? value.toLowerCase() : null;
}
export const MAX_EVENTS_PER_RUN = { default: 100_000, min: 1, max: 1_000_000 } as const;
export const PROXY_TIMEOUT_MS = { default: 10_000, min: 100, max: 120_000 } as const;
/**
 * HARNESS_CLIENT_TIMEOUT_MS: how long one CLI or MCP request to the bridge may take, body included.
 * The default outlasts the slowest answer the bridge gives on purpose: a completion or a read of a
 * completed run, whose validators have 120 s.
 */
export const CLIENT_TIMEOUT_MS = { default: 180_000, min: 1000, max: 600_000 } as const;
/** Files larger than this are hashed in the worker pool; smaller ones inline. */
export const INLINE_HASH_MAX_BYTES = 64 * 1024;
/**
 * The largest artifact the bridge hashes (HARNESS_ARTIFACT_MAX_BYTES): a larger one is refused
 * when claimed and is drift when re-verified, found by its size before any byte is read.
 */
export const ARTIFACT_MAX_BYTES = { default: 256 * 1024 * 1024, min: 1024 * 1024, max: 1024 ** 4 } as const;
/** How long hashing one file may take in the pool (HARNESS_REHASH_TIMEOUT_MS) before it is abandoned. */
export const REHASH_TIMEOUT_MS = { default: 30_000, min: 100, max: 600_000 } as const;
/**
 * Files up to this size are small: any pool thread hashes them. Larger ones share at most
 * HARNESS_WORKERS threads, and the pool has one thread more, so a small file never waits for a
 * large one (src/workers/pool.ts).
 */
export const SMALL_HASH_MAX_BYTES = 8 * 1024 * 1024;
/** Pending operations per run before 503 bridge_busy, and across the bridge. */
export const RUN_QUEUE_MAX = 1024;
export const GLOBAL_QUEUE_MAX = 8192;
/** How long shutdown waits for the operations already admitted before it closes connections. */
export const SHUTDOWN_GRACE_MS = 5_000;
/**
 * The approval text one run may hold: the UTF-8 bytes of the owner and scope of every approval it
 * keeps (pending or decided), plus APPROVAL_RECORD_BYTES per approval for the record and index
 * entries around them. A request past it is refused with 409 run_history_full; replaying a journal
 * never is. 1 MiB is some 120 requests at the 4096-character field maximum, or 2000 short ones, far
 * above what any run asks for, and keeps OPEN_RUN_CACHE open runs within about 512 MiB of approval
 * state even where the heap holds two bytes per character (docs/configuration.md, Limits).
 */
export const APPROVAL_TEXT_MAX_BYTES = 1024 * 1024;
/**
 * What each approval counts against APPROVAL_TEXT_MAX_BYTES beyond its text: its record and index
 * entries measured 250 to 460 bytes (distinct owners each get a map of their own).
 */
export const APPROVAL_RECORD_BYTES = 512;
/** Open runs kept verified in memory. */
export const OPEN_RUN_CACHE = 256;
/** Ceilings on the three run files. */
export const CONFIG_MAX_BYTES = 64 * 1024;
export const SNAPSHOT_MAX_BYTES = 8 * 1024 * 1024;
export const JOURNAL_RECORD_MAX_BYTES = 32 * 1024;
/**
 * An adapter's artifactByNode, as a completion seals it: the sum over its paths of the path as
 * JSON plus 68 bytes (its digest, quotes, colon and comma). With a stored event of at most
 * EVENT_MAX_BYTES and 4 KiB for the rest of the seal and the record's own fields, every accepted
 * run.completed record fits JOURNAL_RECORD_MAX_BYTES.
 */
export const ADAPTER_ARTIFACT_PATHS_MAX_BYTES = 12 * 1024;
/**
 * A run's events.jsonl: past this, appends answer 409 run_history_full. It holds the default
 * 100000 events even at the record ceiling (3.2 GB), and is read back in bounded chunks.
 */
export const JOURNAL_MAX_BYTES = 4 * 1024 * 1024 * 1024;
/** Run directories read at startup before refusing to continue. */
export const RUN_DIRECTORY_MAX = 100_000;
/** Write a snapshot after this many appends since the last one (lazy, amortised O(1)). */
export const SNAPSHOT_EVERY = 4096;
/** The commit log is checkpointed (journals fdatasync'd, log emptied) past this size. */
export const COMMIT_LOG_CHECKPOINT_BYTES = 16 * 1024 * 1024;
/**
 * A journal's lines, durable in the commit log, are written to its events.jsonl once this many
 * bytes wait, or sooner: when the log has no further batch, and before the journal is read, synced
 * or closed (storage/commit-log.ts).
 */
export const JOURNAL_WRITE_BEHIND_BYTES = 32 * 1024;
