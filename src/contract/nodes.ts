import type { NodeId } from './enums.js';

/** CONTRACT section 5: the artifact each node produces unless the adapter overrides it. */
export const DEFAULT_ARTIFACT_BY_NODE: Readonly<Record<NodeId, string>> = {
  intake: 'run/intake.json',
  route: 'run/route.json',
  'code-intelligence': 'graph/graph.json',
  'design-anchors': 'design/anchors.json',
  'system-design': 'design/system_design.md',
  'production-readiness': 'production/layer-assessment.json',
  'cloud-platform': 'cloud/service-map.json',
  implement: 'session/events.jsonl',
  redzone: 'approvals/redzone.json',
  'qa-break-it': 'qa/break-it-results.md',
  prove: 'proof/proof.json',
  'live-smoke': 'smoke/smoke_proof.json',
  'self-heal': 'self_heal/self_heal_report.md',
  handoff: 'handoff/final.md',
};

/** Nodes that stay required whatever the adapter says. */
export const ALWAYS_REQUIRED: readonly NodeId[] = ['prove', 'handoff'];

export const SELF_HEAL_PROPOSAL_PATH = 'self_heal/pr.json';
