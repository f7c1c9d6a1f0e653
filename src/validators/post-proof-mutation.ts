import {
  PROOF_SCHEMA_ID,
  type Proof,
  RUN_PACKET_V3_ID,
  type RunPacketV3,
} from '../contract/artifacts/index.js';
import { PACKET_PATH } from './corrective-work.js';
import { loadDocument, loadJson, schemaIdOf } from './documents.js';
import type { ContentRule } from './facts.js';
import { changesSince, workingTreeScope } from './git.js';
import { ignoredFilesProblems } from './ignored-files.js';
import type { InputsOf } from './inputs.js';

/**
 * The proof, the ignored-file listing it binds (`subject.ignored`, a reference the rule follows)
 * and the packet; in git, the working tree, ignored files included, compared with the commit the
 * proof names.
 */
export const postProofMutationInputs: InputsOf = (facts) => ({
  files: [facts.config.artifactByNode.prove, PACKET_PATH],
  documents: [facts.config.artifactByNode.prove],
  repository: { workingTree: true, commitsNamedIn: [facts.config.artifactByNode.prove] },
});

/**
 * The rule-9 refusal "post-proof application mutation". A commissioned proof names the commit it
 * ran at on a clean tree; the repository working tree (outside the artifact root) must still equal
 * that commit, its git-ignored files must be those the proof ran with (ignored-files.ts), and the
 * packet must bind the same commit. Anything git cannot answer is a problem.
 */
export const postProofMutation: ContentRule = async (facts, env) => {
  if (env.realRoot === null) return [];
  const proofPath = facts.config.artifactByNode.prove;
  const proof = await loadDocument<Proof>(env.realRoot, proofPath, PROOF_SCHEMA_ID, env.verified);
  if (!proof.ok) return [`${proofPath} is missing or invalid, so the proven commit is unknown`];
  const subject = proof.value.subject;
  if (!subject) return [`${proofPath} does not name the commit it proved (subject.commit)`];
  const problems: string[] = [];
  if (subject.dirty) problems.push(`${proofPath} ran on a working tree with uncommitted changes`);

  const { repo, excludeRel } = await workingTreeScope(env.repoRoot, env.realRoot);
  const changed = await changesSince(repo, subject.commit, excludeRel);
  if (changed === null)
    problems.push(`the working tree cannot be compared with proven commit ${subject.commit}`);
  else if (changed.length > 0) {
    const shown = changed.slice(0, 5).join(', ');
    problems.push(
      `application changed after proof at ${subject.commit}: ${shown}${changed.length > 5 ? ', ...' : ''}`,
    );
  }
  problems.push(
    ...(await ignoredFilesProblems(facts, { ...env, realRoot: env.realRoot }, proofPath, subject)),
  );

  const packet = await loadJson(env.realRoot, PACKET_PATH, env.verified);
  if (packet.kind === 'ok' && schemaIdOf(packet.value) === RUN_PACKET_V3_ID) {
    const commit = (packet.value as Partial<RunPacketV3>).subject?.commit;
    if (commit !== subject.commit)
      problems.push(`${PACKET_PATH} binds ${commit ?? 'no commit'}, not the proven ${subject.commit}`);
  }
  return problems;
};
