import type { RunConfig, RunState } from '../contract/index.js';

/** What every finish-line rule reads: the sealed config and the journal-derived state. */
export interface RunFacts {
  runId: string;
  config: RunConfig;
  state: RunState;
}

/** A structural rule: pure, synchronous, returns every problem it finds (empty = holds). */
export type StructuralRule = (facts: RunFacts) => string[];
