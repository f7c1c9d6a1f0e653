import type { RunFacts } from './facts.js';

/**
 * What a content rule reads under the artifact root, declared beside the rule. The completed-run
 * verdict cache binds exactly these inputs (src/server/verdict-inputs.ts), so a rule that reads a
 * file it does not declare could be answered from a stale verdict: test/finish-line-inputs.test.ts
 * runs every rule with its file accesses recorded and fails on any access outside the declaration.
 */
export interface RuleInputs {
  /** Paths opened by fixed or configured name, present or not (an absent file is an input too). */
  files: readonly string[];
  /** Documents among `files` whose artifact references (`{path, sha256}` objects) the rule opens. */
  documents?: readonly string[];
  /** The rule lists the whole root (the review-signature inventory). */
  enumeratesRoot?: boolean;
}

export type InputsOf = (facts: RunFacts) => RuleInputs;

/** The union of the inputs of every rule that runs for a run. */
export interface ValidatorInputs {
  files: string[];
  documents: string[];
  enumeratesRoot: boolean;
}

export function mergeInputs(list: readonly RuleInputs[]): ValidatorInputs {
  const files = new Set<string>();
  const documents = new Set<string>();
  let enumeratesRoot = false;
  for (const i of list) {
    for (const f of i.files) files.add(f);
    for (const d of i.documents ?? []) documents.add(d);
    enumeratesRoot ||= i.enumeratesRoot === true;
  }
  return { files: [...files].sort(), documents: [...documents].sort(), enumeratesRoot };
}
