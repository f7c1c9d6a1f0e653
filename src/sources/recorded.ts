import type { RunEvent } from '../contract/index.js';

/** A recorded event and where it came from in its input (`line 7`), for a refusal to name. */
export interface RecordedEvent {
  where: string;
  event: RunEvent;
}

/**
 * What `harness replay` posts, whatever the input was: every event already judged against the
 * contract, the source the replay run is recorded under, and a name to derive the run ID from.
 * A second input kind (an exported bundle, source `run-packet`) is one more reader returning this.
 */
export interface ReplayInput {
  source: Extract<RunEvent['eventSource'], 'local-jsonl' | 'run-packet'>;
  events: RecordedEvent[];
  name: string;
}
