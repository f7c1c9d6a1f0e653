import {
  PRODUCTION_READINESS_V2_ID,
  type ProductionReadinessV2,
  RUN_PACKET_V3_ID,
  type RunPacketV3,
} from '../contract/artifacts/index.js';
import { PACKET_PATH } from './corrective-work.js';
import { loadJson, schemaProblems } from './documents.js';
import type { ArtifactFacts, ContentRule } from './facts.js';
import type { InputsOf } from './inputs.js';
import type { VerifiedDigests } from './verified-bytes.js';

export const waiversInputs: InputsOf = (facts) => ({
  files: [PACKET_PATH, facts.config.artifactByNode['production-readiness']],
});

/**
 * Every active waiver must be tied to an approval (node, owner, scope) that a human granted: the
 * bridge accepts approval.granted only with the human token, so this correlates each waiver with
 * a human-token-gated event in the journal. A waived production layer must name an active waiver.
 * With approvals known only in part (facts from a run view that left some out), a waiver whose
 * approval is not among them cannot be decided here and is not reported: the bridge's gate, which
 * reads the whole history, decides it.
 */
export const waivers: ContentRule = async (facts, env) => {
  if (env.realRoot === null) return [];
  const packet = await loadJson(env.realRoot, PACKET_PATH, env.verified);
  const valid =
    packet.kind === 'ok' && schemaProblems(PACKET_PATH, RUN_PACKET_V3_ID, packet.value).length === 0;
  const list = valid ? (packet.value as RunPacketV3).waivers : [];
  const problems: string[] = [];
  const active = new Set<string>();
  for (const w of list) {
    if (w.status !== 'active') continue;
    if (active.has(w.waiverId)) problems.push(`waiver ${w.waiverId} is listed twice`);
    active.add(w.waiverId);
    const { nodeId, owner, scope } = w.approval;
    const granted = facts.state.approvals.some(
      (a) => a.status === 'granted' && a.nodeId === nodeId && a.owner === owner && a.scope === scope,
    );
    if (!granted && !facts.approvalsPartial) {
      problems.push(
        `waiver ${w.waiverId} is not tied to a human-granted approval (${nodeId}, ${owner}, ${scope})`,
      );
    }
  }
  problems.push(...(await waivedLayerProblems(facts, env.realRoot, active, env.verified)));
  return problems;
};

/**
 * A waived production layer must name an active waiver of the packet (`active`, by waiverId).
 * Shared with `harness packet write`, which refuses a packet whose waivers leave a layer uncovered.
 */
export async function waivedLayerProblems(
  facts: ArtifactFacts,
  realRoot: string,
  active: ReadonlySet<string>,
  verified?: VerifiedDigests,
): Promise<string[]> {
  const problems: string[] = [];
  const layersPath = facts.config.artifactByNode['production-readiness'];
  const layers = await loadJson(realRoot, layersPath, verified);
  if (
    layers.kind === 'ok' &&
    schemaProblems(layersPath, PRODUCTION_READINESS_V2_ID, layers.value).length === 0
  ) {
    for (const l of (layers.value as ProductionReadinessV2).layers) {
      if (l.status !== 'waived') continue;
      if (!l.waiverId || !active.has(l.waiverId)) {
        problems.push(
          `layer ${l.layer} is waived but ${l.waiverId ?? 'no waiver'} is not an active packet waiver`,
        );
      }
    }
  }
  return problems;
}
