import {
  PROOF_SCHEMA_ID,
  type Proof,
  RUN_PACKET_V3_ID,
  type RunPacketV3,
} from '../contract/artifacts/index.js';
import { PACKET_PATH } from './corrective-work.js';
import { loadDocument, loadJson, schemaIdOf } from './documents.js';
import type { ContentRule } from './facts.js';
import { changesSince, commitExists, workingTreeScope } from './git.js';
import { ignoredFilesProblems } from './ignored-files.js';
import type { InputsOf } from './inputs.js';

/**
 * The proof, the ignored-file listing it binds (`subject.ignored`, a reference the rule follows)
 * and the packet; in git, the commit the proof names and, at the gate only, the working tree,
 * ignored files included, compared with it.
 */
export const postProofMutationInputs: InputsOf = (facts, stage) => ({
  files: [facts.config.artifactByNode.prove, PACKET_PATH],
  documents: [facts.config.artifactByNode.prove],
  repository: { workingTree: stage === 'gate', commitsNamedIn: [facts.config.artifactByNode.prove] },
});

/**
 * The rule-9 refusal "post-proof application mutation". A commissioned proof names the commit it
 * ran at on a clean tree; at the gate the repository working tree (outside the artifact root) must
 * still equal that commit and its git-ignored files must be those the proof ran with
 * (ignored-files.ts); the packet must bind the same commit. Anything git cannot answer is a problem.
 *
 * Re-verifying a completed run (stage `read`) holds it to what the completion bound, not to the
 * working tree: the proven commit must still exist, but commits and edits made after the
 * completion are further work, not a mutation of what was proven (SPEC quarantines a completed run
 * for deletion, byte drift or privacy drift of what it references).
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

  if (env.stage === 'read') {
    if (!(await commitExists(env.repoRoot, subject.commit)))
      problems.push(`proven commit ${subject.commit} no longer exists in the repository`);
  } else {
    problems.push(...(await workingTreeProblems(env.repoRoot, env.realRoot, subject.commit)));
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

/** The working tree outside the artifact root against the proven commit (the gate's comparison). */
async function workingTreeProblems(repoRoot: string, realRoot: string, commit: string): Promise<string[]> {
  const { repo, excludeRel } = await workingTreeScope(repoRoot, realRoot);
  const changed = await changesSince(repo, commit, excludeRel);
  if (changed === null) return [`the working tree cannot be compared with proven commit ${commit}`];
  if (changed.length > 0) {
    const shown = changed.slice(0, 5).join(', ');
    return [`application changed after proof at ${commit}: ${shown}${changed.length > 5 ? ', ...' : ''}`];
  }
  return [];
}
