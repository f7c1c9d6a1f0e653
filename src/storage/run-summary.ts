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

/**
 * A summary as the run index keeps it: the fields that are not the entry's own (ID, creation time)
 * or derived from the others, as a JSON array, a third of the summary's JSON.
 */
export function packSummary(s: RunSummary): string {
  return JSON.stringify([
    s.title,
    s.status,
    s.runMode,
    s.commissioned,
    s.updatedAt,
    s.currentNodeId,
    s.eventCount,
    s.pendingApprovals,
  ]);
}

export function unpackSummary(runId: string, createdAt: string, packed: string): RunSummary {
  const [title, status, runMode, commissioned, updatedAt, currentNodeId, eventCount, pendingApprovals] =
    JSON.parse(packed) as [
      RunSummary['title'],
      RunSummary['status'],
      RunSummary['runMode'],
      boolean,
      string,
      RunSummary['currentNodeId'],
      number,
      number,
    ];
  return {
    id: runId,
    title,
    status,
    runMode,
    commissioned,
    createdAt,
    updatedAt,
    currentNodeId,
    eventCount,
    eventsTruncated: eventCount > 0,
    pendingApprovals,
    reverificationDue: false,
  };
}
