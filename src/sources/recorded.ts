import type { RunEvent } from '../contract/index.js';

/** A recorded event and where it came from in its input (`line 7`, `event 3`), for a refusal to name. */
export interface RecordedEvent {
  where: string;
  event: RunEvent;
}

/**
 * What `harness replay` posts, whatever the input was: every event already judged against the
 * contract, the source the replay run is recorded under, and a name to derive the run ID from.
 * Each input kind (a JSONL file, an exported bundle, a run the bridge holds) is one reader
 * returning this.
 */
export interface ReplayInput {
  source: Extract<RunEvent['eventSource'], 'local-jsonl' | 'run-packet' | 'database'>;
  events: RecordedEvent[];
  name: string;
  /** A bundle exported --with-artifacts: each claimed path's last bytes, base64, by path. */
  contents?: Record<string, string>;
}
