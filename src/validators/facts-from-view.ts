import type { NodeId, RunConfig, RunViewT } from '../contract/index.js';
import { emptyState } from '../contract/index.js';
import type { RunFacts } from './facts.js';

/**
 * Rebuilds the finish-line facts from the bridge's run view, which carries everything the rules
 * read: node states and reasons, the required flag and configured artifact of each node, the
 * verified artifact claims, approvals, the self-heal record, the commissioned flag, the adapter's
 * assurance flag and the trust pin. What the view withholds is filled with values no rule reads:
 * the adapter's absolute path and the human token digest. The view does not say which event
 * resolved a self-heal; a resolution that verified an artifact is recorded as pr_proposed. A view
 * that left approvals out gives facts marked `approvalsPartial`.
 */
export function factsFromView(view: RunViewT, realRoot: string | null): RunFacts {
  const state = emptyState(view.id, view.createdAt);
  state.runMode = view.runMode;
  state.status = view.status === 'quarantined' ? 'blocked' : view.status;
  state.eventCount = view.eventCount;
  state.updatedAt = view.updatedAt;
  state.currentNodeId = view.currentNodeId;
  const requiredNodes: NodeId[] = [];
  const artifactByNode = {} as Record<NodeId, string>;
  for (const n of view.nodes) {
    state.nodes[n.id] = {
      state: n.state,
      seq: n.updatedSeq,
      skipReason: n.skipReason,
      failureReason: n.failureReason,
      recoveryPath: n.recoveryPath,
    };
    if (n.required) requiredNodes.push(n.id);
    if (n.artifact !== null) artifactByNode[n.id] = n.artifact;
  }
  state.approvals = view.approvals.map((a) => ({ ...a }));
  for (const a of view.artifacts) state.artifacts[a.path] = { ...a };
  const sh = view.selfHeal;
  state.selfHeal = {
    detectedSeq: sh.detectedSeq,
    resolvedSeq: sh.resolvedSeq,
    resolution: sh.resolved
      ? {
          type: sh.artifact !== null ? 'self_heal.pr_proposed' : 'self_heal.pr_opened',
          prUrl: sh.prUrl,
          artifact: sh.artifact,
        }
      : null,
  };
  const config: RunConfig = {
    schema: 'harness.run-config.v1',
    runId: view.id,
    createdAt: view.createdAt,
    artifactRoot: realRoot,
    adapter: view.adapter
      ? {
          rootKind: view.adapter.rootKind as NonNullable<RunConfig['adapter']>['rootKind'],
          path: '',
          sha256: view.adapter.sha256,
          finishLineAssurance: view.adapter.finishLineAssurance,
          ...(view.adapter.ignoredMayChange ? { ignoredMayChange: view.adapter.ignoredMayChange } : {}),
        }
      : null,
    trustPin: view.trustPin,
    commissioned: view.commissioned,
    humanTokenDigest: '',
    requiredNodes,
    artifactByNode,
    metadata: { ...view.metadata },
    runMode: view.runMode,
    eventSource: null,
  };
  const facts: RunFacts = { runId: view.id, config, state };
  if (view.approvalsOmitted > 0) facts.approvalsPartial = true;
  return facts;
}

/**
 * What a tool working from the view says when the view left approvals out (null when it did not):
 * its approval facts are partial, and the waivers it cannot decide are the bridge's to decide.
 */
export function partialApprovalsNote(view: Pick<RunViewT, 'approvalsOmitted'>): string | null {
  const n = view.approvalsOmitted;
  if (!(n > 0)) return null;
  return `approval facts are partial: the run view left ${n} approval${n === 1 ? '' : 's'} out, so a waiver whose approval is not shown is not checked here; the bridge's gate checks it at run.completed`;
}
