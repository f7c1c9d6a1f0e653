import { RCA_SCHEMA_ID, type Rca, RUN_PACKET_V3_ID } from '../contract/artifacts/index.js';
import { loadJson, schemaIdOf, schemaProblems } from './documents.js';
import type { ContentRule, FinishLineEnv } from './facts.js';
import { commitExists, isAncestor, treeOf } from './git.js';
import type { InputsOf } from './inputs.js';
import { readRoute } from './route-document.js';

export const RCA_PATH = 'rca/rca.json';
export const PACKET_PATH = 'run/packet.json';

/** The route, the RCA and the packet; in git, the commits the RCA names (none without an RCA). */
export const correctiveWorkInputs: InputsOf = (facts) => ({
  files: [facts.config.artifactByNode.route, RCA_PATH, PACKET_PATH],
  repository: { commitsNamedIn: [RCA_PATH] },
});

/**
 * SPEC completion rule 5 and the rule-9 refusals "narrative RCA" and "code fix without regression
 * proof". Corrective work is triggered by the route (bug, regression, incident, self-heal or
 * requiresRca), by any self_heal.detected, or by the mere presence of rca/rca.json: an agent
 * cannot opt out by leaving the route vague.
 */
export const correctiveWork: ContentRule = async (facts, env) => {
  if (env.realRoot === null) {
    return facts.state.selfHeal.detectedSeq !== null
      ? ['self-heal work needs rca/rca.json but the run has no artifact root']
      : [];
  }
  const root = env.realRoot;
  const route = await readRoute(facts, root, env.verified);
  const rcaLoaded = await loadJson(root, RCA_PATH, env.verified);
  const triggers: string[] = [];
  if (route.corrective) triggers.push('the route is corrective');
  if (facts.state.selfHeal.detectedSeq !== null) triggers.push('self_heal.detected was emitted');
  if (rcaLoaded.kind !== 'missing') triggers.push(`${RCA_PATH} exists`);
  if (triggers.length === 0) return [];

  const why = triggers.join(', ');
  if (rcaLoaded.kind === 'missing') {
    return [`a code fix without regression proof cannot close the run: ${why} but ${RCA_PATH} is missing`];
  }
  if (rcaLoaded.kind === 'error') return [rcaLoaded.problem];
  const doc = rcaLoaded.value as { rootCause?: unknown } | null;
  const problems: string[] = [];
  const rc = typeof doc === 'object' && doc !== null ? doc.rootCause : undefined;
  if (typeof rc !== 'object' || rc === null || typeof (rc as { category?: unknown }).category !== 'string') {
    problems.push('narrative RCA: the root cause must be typed (category, summary, location, evidence)');
  }
  const shape = schemaProblems(RCA_PATH, RCA_SCHEMA_ID, rcaLoaded.value);
  if (shape.length > 0) return [...problems, ...shape];
  return [...problems, ...(await chainProblems(rcaLoaded.value as Rca, facts.runId, env))];
};

async function chainProblems(rca: Rca, runId: string, env: FinishLineEnv): Promise<string[]> {
  const { repoRoot } = env;
  const p: string[] = [];
  const { preFix, postFix, regression } = rca;
  if (rca.status !== 'confirmed') p.push(`the root cause is ${rca.status}, not confirmed`);
  for (const [name, id] of [
    ['rca', rca.runId],
    ['preFix', preFix.runId],
    ['postFix', postFix.runId],
  ] as const) {
    if (id !== runId) p.push(`${name}.runId ${id} is not this run`);
  }
  if (preFix.command !== regression.command || postFix.command !== regression.command) {
    p.push('both phases must run the one bound regression command');
  }
  const envId = regression.environment.id;
  if (preFix.environmentId !== envId || postFix.environmentId !== envId) {
    p.push(`both phases must run in the bound environment ${envId}`);
  }
  if (preFix.exitCode === 0) p.push('code fix without regression proof: the pre-fix phase did not fail');
  if (postFix.exitCode !== 0) p.push(`the post-fix phase exited ${postFix.exitCode}, not 0`);
  if (preFix.commit === postFix.commit) p.push('the pre-fix and post-fix commits must be distinct');
  const [preOk, postOk] = await Promise.all([
    commitExists(repoRoot, preFix.commit),
    commitExists(repoRoot, postFix.commit),
  ]);
  if (!preOk) p.push(`pre-fix commit ${preFix.commit} does not exist in the repository`);
  if (!postOk) p.push(`post-fix commit ${postFix.commit} does not exist in the repository`);
  if (preOk && postOk && preFix.commit !== postFix.commit) {
    if (!(await isAncestor(repoRoot, preFix.commit, postFix.commit))) {
      p.push('the pre-fix commit is not an ancestor of the post-fix commit');
    }
    p.push(...(await fixChangesSomething(repoRoot, preFix.commit, postFix.commit)));
  }
  p.push(...(await packetBindsCommit(env, postFix.commit)));
  return p;
}

/**
 * Corrective work with no work: two commits with one tree (`--allow-empty`, or a change and its
 * revert) let the self-reported failing and passing phases run the same code.
 */
async function fixChangesSomething(repoRoot: string, pre: string, post: string): Promise<string[]> {
  const [preTree, postTree] = await Promise.all([treeOf(repoRoot, pre), treeOf(repoRoot, post)]);
  if (preTree === null || postTree === null)
    return ['the trees of the pre-fix and post-fix commits cannot be read'];
  return preTree === postTree
    ? [`the post-fix commit ${post} changes nothing: its tree is the pre-fix commit's tree`]
    : [];
}

/** The final packet must name the post-fix commit; a historical v2 packet cannot. */
async function packetBindsCommit(env: FinishLineEnv, commit: string): Promise<string[]> {
  if (env.realRoot === null) return [];
  const packet = await loadJson(env.realRoot, PACKET_PATH, env.verified);
  if (packet.kind === 'missing')
    return [`${PACKET_PATH} is missing: the packet must bind the post-fix commit`];
  if (packet.kind === 'error') return [packet.problem];
  if (schemaIdOf(packet.value) !== RUN_PACKET_V3_ID) {
    return [`${PACKET_PATH} is not ${RUN_PACKET_V3_ID}: it cannot bind the post-fix commit`];
  }
  const subject = (packet.value as { subject?: { commit?: unknown } }).subject;
  return subject?.commit === commit
    ? []
    : [`${PACKET_PATH} subject.commit does not name the post-fix commit ${commit}`];
}
