import {
  PRODUCTION_LAYERS,
  PRODUCTION_READINESS_V1_ID,
  PRODUCTION_READINESS_V2_ID,
  type ProductionReadinessV1,
  type ProductionReadinessV2,
} from '../contract/artifacts/index.js';
import { loadJson, schemaIdOf, schemaProblems } from './documents.js';
import { assuranceRequired, type ContentRule } from './facts.js';
import type { InputsOf } from './inputs.js';

/** Read whether or not the node is required: a present assessment is never ignored. */
export const productionReadinessInputs: InputsOf = (facts) => ({
  files: [facts.config.artifactByNode['production-readiness']],
});

/**
 * SPEC completion rule 7: the layer assessment validates all 13 canonical layers, each exactly
 * once. It runs when the production-readiness node is required and not skipped, or whenever the
 * file exists (a present assessment is never ignored). v1 history stays readable on ordinary runs;
 * commissioned runs need v2.
 */
export const productionReadiness: ContentRule = async (facts, env) => {
  const id = 'production-readiness';
  const path = facts.config.artifactByNode[id];
  const expected = facts.config.requiredNodes.includes(id) && facts.state.nodes[id].state !== 'skipped';
  if (env.realRoot === null) return expected ? [`${path} cannot be read: the run has no artifact root`] : [];
  const loaded = await loadJson(env.realRoot, path, env.verified);
  if (loaded.kind === 'missing') return expected ? [`${path} is missing`] : [];
  if (loaded.kind === 'error') return [loaded.problem];
  const schema = schemaIdOf(loaded.value);
  if (schema === PRODUCTION_READINESS_V1_ID) {
    if (assuranceRequired(facts))
      return [`${path} is v1: commissioned runs need ${PRODUCTION_READINESS_V2_ID}`];
    const shape = schemaProblems(path, schema, loaded.value);
    return shape.length > 0 ? shape : v1Problems(path, loaded.value as ProductionReadinessV1);
  }
  const shape = schemaProblems(path, PRODUCTION_READINESS_V2_ID, loaded.value);
  if (shape.length > 0) return shape;
  return v2Problems(path, loaded.value as ProductionReadinessV2, facts.runId);
};

function coverage(path: string, layers: readonly string[]): string[] {
  const problems: string[] = [];
  for (const layer of PRODUCTION_LAYERS) {
    const n = layers.filter((l) => l === layer).length;
    if (n === 0) problems.push(`${path} does not assess layer ${layer}`);
    if (n > 1) problems.push(`${path} assesses layer ${layer} ${n} times`);
  }
  return problems;
}

function v1Problems(path: string, doc: ProductionReadinessV1): string[] {
  const problems = coverage(
    path,
    doc.layers.map((l) => l.layer),
  );
  for (const l of doc.layers) if (l.status === 'fail') problems.push(`${path} layer ${l.layer} failed`);
  return problems;
}

function v2Problems(path: string, doc: ProductionReadinessV2, runId: string): string[] {
  const problems = coverage(
    path,
    doc.layers.map((l) => l.layer),
  );
  if (doc.runId !== runId) problems.push(`${path} runId ${doc.runId} is not this run`);
  for (const l of doc.layers) {
    const at = `${path} layer ${l.layer}`;
    if (l.applicability === 'not-applicable') {
      if (!l.reason?.trim()) problems.push(`${at} is not-applicable without a reason`);
      if (l.status !== 'not-applicable') problems.push(`${at} is not-applicable but has status ${l.status}`);
      continue;
    }
    if (l.status === 'not-applicable') problems.push(`${at} is required but has status not-applicable`);
    else if (l.status === 'failed' || l.status === 'pending') problems.push(`${at} is ${l.status}`);
    if (l.status === 'waived' && !l.waiverId) problems.push(`${at} is waived without a waiverId`);
    if (l.controls.length === 0) problems.push(`${at} is required but lists no controls`);
  }
  return problems;
}
