import type { EventViewT, JournalEntry, NodeId, RunState, RunSummary, RunViewT } from '../contract/index.js';
import { approvalDrift, NODE_IDS } from '../contract/index.js';
import { runSummary } from '../storage/run-summary.js';
import type { QuarantineInfo } from '../storage/store.js';
import type { OpenRun } from '../storage/types.js';
import type { CompletionPreview } from './completion.js';
import {
  boundedApprovals,
  boundedProblems,
  boundedQuarantine,
  boundedSteps,
  boundTexts,
} from './view-bounds.js';

/** Response views. Absolute paths (artifact root, adapter file) never leave the bridge in a run view. */
export function eventView(entry: JournalEntry): EventViewT {
  const { artifactRoot, adapterPath, ...rest } = entry.event;
  const view: EventViewT = { seq: entry.seq, ...rest };
  if (artifactRoot !== undefined) view.artifactRootSet = true;
  if (adapterPath !== undefined) view.adapterPathSet = true;
  if (entry.claim) view.claim = entry.claim;
  return view;
}

/**
 * The JSON text of `eventView(entry)`, built around the event's canonical JSON as stored (its
 * members sorted, RFC 8785) instead of copying the event and serializing it again. An event that
 * set up the run carries absolute paths, which never leave the bridge: it takes `eventView`.
 */
export function eventViewJson(entry: JournalEntry, eventJson: string): string {
  if (entry.event.artifactRoot !== undefined || entry.event.adapterPath !== undefined)
    return JSON.stringify(eventView(entry));
  const claim = entry.claim ? `,"claim":${JSON.stringify(entry.claim)}` : '';
  return `{"seq":${entry.seq},${eventJson.slice(1, -1)}${claim}}`;
}

export function summaryView(run: OpenRun, quarantine?: QuarantineInfo): RunSummary {
  const summary = runSummary(run.runId, run.state, run.config);
  if (quarantine) summary.status = 'quarantined';
  return summary;
}

/** A run whose files failed authentication: only what can be said without trusting them. */
export function quarantinedSummary(runId: string, createdAt: string, q: QuarantineInfo): RunSummary {
  return {
    id: runId,
    title: null,
    status: 'quarantined',
    runMode: null,
    commissioned: false,
    createdAt,
    updatedAt: q.since,
    currentNodeId: null,
    eventCount: 0,
    eventsTruncated: false,
    pendingApprovals: 0,
    reverificationDue: false,
  };
}

type NodeDrift = RunViewT['nodes'][number]['approvalDrift'][number];

/**
 * Each node's drifted decisions (approval-drift.ts) as its view shows them: one entry per
 * artifact, with the newest decision that drifted and how many did. A node's decisions bind at
 * most its own artifact and a self-heal proposal, so a node shows at most two, whatever the
 * run's history; the completion preview names each decision.
 */
function driftByNode(state: RunState): Map<NodeId, NodeDrift[]> {
  const byNode = new Map<NodeId, NodeDrift[]>();
  for (const d of approvalDrift(state)) {
    const list = byNode.get(d.approval.nodeId) ?? [];
    byNode.set(d.approval.nodeId, list);
    const entry: NodeDrift = {
      path: d.path,
      decision: d.decision,
      decidedSeq: d.approval.decidedSeq ?? 0,
      approvedSha256: d.approvedSha256,
      currentSha256: d.currentSha256,
      currentSeq: d.currentSeq,
      decisions: 1,
    };
    const seen = list.find((e) => e.path === d.path);
    if (!seen) list.push(entry);
    else if (seen.decidedSeq < entry.decidedSeq)
      Object.assign(seen, entry, { decisions: seen.decisions + 1 });
    else seen.decisions++;
  }
  return byNode;
}

export function runView(
  run: OpenRun,
  preview: CompletionPreview,
  quarantine: QuarantineInfo | undefined,
): Omit<RunViewT, 'eventsTruncated'> & { eventsTruncated: boolean } {
  const { state, config } = run;
  const required = new Set(config.requiredNodes);
  const { approvals, omitted } = boundedApprovals(state.approvals);
  const drift = driftByNode(state);
  const nodes = NODE_IDS.map((id) => {
    const node = state.nodes[id];
    const artifact = config.artifactByNode[id] ?? null;
    // As the artifact record says: a last write reported failed is not a verified artifact.
    const record = artifact === null ? undefined : state.artifacts[artifact];
    return {
      id,
      state: node.state,
      required: required.has(id),
      artifact,
      artifactVerified: record !== undefined && record.outcome !== 'failed',
      skipReason: node.skipReason,
      failureReason: node.failureReason,
      recoveryPath: node.recoveryPath,
      updatedSeq: node.seq,
      approvalDrift: drift.get(id) ?? [],
    };
  });
  const artifacts = Object.values(state.artifacts).map((a) => ({ ...a }));
  // Shortens the copies only: the run state and the journal keep every text whole.
  const textsShortened = boundTexts([...nodes, ...artifacts]);
  return {
    ...summaryView(run, quarantine),
    metadata: { ...config.metadata } as Record<string, string>,
    artifactRootSet: config.artifactRoot !== null,
    adapter: config.adapter
      ? {
          rootKind: config.adapter.rootKind,
          sha256: config.adapter.sha256,
          finishLineAssurance: config.adapter.finishLineAssurance,
          ...(config.adapter.ignoredMayChange ? { ignoredMayChange: config.adapter.ignoredMayChange } : {}),
        }
      : null,
    trustPin: config.trustPin,
    nodes,
    approvals,
    approvalsOmitted: omitted,
    artifacts,
    textsShortened,
    selfHeal: {
      detected: state.selfHeal.detectedSeq !== null,
      detectedSeq: state.selfHeal.detectedSeq,
      resolved: state.selfHeal.resolution !== null,
      resolvedSeq: state.selfHeal.resolvedSeq,
      prUrl: state.selfHeal.resolution?.prUrl ?? null,
      artifact: state.selfHeal.resolution?.artifact ?? null,
    },
    completionPreview: {
      ready: preview.ready,
      problems: boundedProblems(preview.problems),
      steps: boundedSteps(preview.steps),
    },
    quarantine: quarantine ? boundedQuarantine(quarantine) : null,
  };
}
