import type { RunConfig, RunState, RunSummary } from '../contract/index.js';
import { pendingApprovalCount, runModeOf } from '../contract/index.js';

/**
 * What `GET /runs` shows of a run, from its state and config: the run index keeps it as JSON for
 * every run (run-index-file.ts), so a listing never opens a run that is not open already.
 */
export function runSummary(runId: string, state: RunState, config: RunConfig): RunSummary {
  return {
    id: runId,
    title: config.metadata.title ?? null,
    status: state.status,
    runMode: runModeOf(state, config),
    commissioned: config.commissioned,
    createdAt: state.createdAt,
    updatedAt: state.updatedAt,
    currentNodeId: state.currentNodeId,
    eventCount: state.eventCount,
    eventsTruncated: state.eventCount > 0,
    pendingApprovals: pendingApprovalCount(state),
    reverificationDue: false,
  };
}
