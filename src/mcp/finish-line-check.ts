import { factsFromView, partialApprovalsNote } from '../validators/facts-from-view.js';
import { localArtifactProblems } from '../validators/local-artifact-check.js';
import { previewAndLocalSteps } from '../validators/next-step.js';
import type { ToolDefinition } from './context.js';
import { failure, success } from './result.js';
import { confirmedRoot, fetchRunView } from './run-root.js';
import { FinishLineCheckInput } from './schemas.js';

export const finishLineCheck: ToolDefinition = {
  name: 'harness.finish_line_check',
  description:
    "List every problem that would block run.completed, without completing: the bridge's completion preview (required nodes passed or skipped with a reason, required artifacts verified, no pending approval, self-heal resolved), drift of verified artifacts, the access token's value in an artifact or a document the gate reads, and the finish-line content validators run locally on the artifact root (proof.json as harness.proof.v1, production/layer-assessment.json covering all 13 layers, corrective-work RCA chain, and on commissioned runs review, packet, waivers). ready true means run.completed should be accepted. steps lists each problem as {problem, nodeId?, fix}: fix is the command (with this run's IDs and paths) or the docs section that clears it.",
  inputSchema: FinishLineCheckInput,
  async run(session, args) {
    const runId = String(args['runId']);
    const fetched = await fetchRunView(session, runId);
    if (!fetched.ok) return fetched.result;
    const view = fetched.value;
    if (view.status === 'completed') {
      return success({ runId, status: view.status, ready: true, completed: true, problems: [], steps: [] });
    }
    if (view.status === 'quarantined') {
      return failure('run_quarantined', 'the run is quarantined', view.quarantine?.reasons ?? []);
    }
    let realRoot: string | null = null;
    if (view.artifactRootSet) {
      const root = await confirmedRoot(
        session,
        runId,
        typeof args['artifactRoot'] === 'string' ? args['artifactRoot'] : undefined,
      );
      if (!root.ok) return root.result;
      realRoot = root.value;
    }
    const facts = factsFromView(view, realRoot);
    const validators = await session.finishLine(facts, {
      realRoot,
      repoRoot: await session.bridgeRepoRoot(),
      trustPin: view.trustPin,
    });
    const bridgeProblems = view.completionPreview.problems;
    const driftProblems =
      realRoot === null ? [] : await localArtifactProblems(facts, realRoot, session.accessToken);
    const found = previewAndLocalSteps(view.completionPreview, {
      problems: [...driftProblems, ...validators],
      ctx: { facts, root: realRoot },
    });
    const steps = [...found.bridge, ...found.local];
    const partial = partialApprovalsNote(view);
    return success({
      runId,
      status: view.status,
      ready: steps.length === 0,
      completed: false,
      problems: steps.map((s) => s.problem),
      steps,
      bridgeProblems,
      validatorProblems: found.local.map((s) => s.problem),
      approvalFactsPartial: partial !== null,
      notes: partial === null ? [] : [partial],
    });
  },
};
