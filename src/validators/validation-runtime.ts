import { PACKET_PATH, RCA_PATH } from './corrective-work.js';
import { loadJson } from './documents.js';
import type { ContentRule } from './facts.js';
import type { InputsOf } from './inputs.js';
import { scanJson } from './json-scan.js';
import { REVIEW_PATH } from './review.js';

const RUNTIME_KEYS =
  /^(validators?|validator_?(runtime|path|command|module|url)|validation_?(runtime|command|path))$/i;

/** The documents scanned: the rule reads exactly this list. */
export const externalValidationRuntimeInputs: InputsOf = (facts) => ({
  files: [REVIEW_PATH, PACKET_PATH, RCA_PATH, facts.config.artifactByNode.prove],
});

/**
 * The rule-9 refusal "external validation runtime": evidence may only say it was validated by
 * the bridge's own installed code (`validation: {runtime: "harness-bridge"}`). Any document naming
 * another validator runtime, path, command or URL claims a verdict the bridge did not produce.
 */
export const externalValidationRuntime: ContentRule = async (facts, env) => {
  if (env.realRoot === null) return [];
  const problems: string[] = [];
  for (const path of externalValidationRuntimeInputs(facts, env.stage ?? 'gate').files) {
    const doc = await loadJson(env.realRoot, path, env.verified);
    if (doc.kind !== 'ok') continue;
    const hits = scanJson(doc.value, (key, v) => {
      if (key === null) return false;
      if (key === 'validation') return !isOwnRuntime(v);
      return RUNTIME_KEYS.test(key);
    });
    for (const at of hits) problems.push(`${path} names a validation runtime outside the bridge at ${at}`);
  }
  return problems;
};

function isOwnRuntime(v: unknown): boolean {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const keys = Object.keys(v);
  return (
    (v as { runtime?: unknown }).runtime === 'harness-bridge' &&
    keys.every((k) => k === 'runtime' || k === 'version')
  );
}
