import type { Command } from 'commander';
import { placeholder } from '../contract/command-line.js';
import { type QuarantinedRunReadT, RUN_ID_PATTERN, type RunReadT } from '../contract/index.js';
import { factsFromView, partialApprovalsNote } from '../validators/facts-from-view.js';
import { localArtifactProblems } from '../validators/local-artifact-check.js';
import { type FixContext, type NextStep, previewAndLocalSteps, unlisted } from '../validators/next-step.js';
import type { Problem } from '../validators/problem.js';
import { createFinishLineCheck } from '../validators/runner.js';
import { refuseIntegrityKey, requireEnv, UsageError } from './env.js';
import { bridgeRequest, describeFailure } from './http.js';
import { realArtifactRoot, repoRootFromEnv } from './local-paths.js';
import { terminalJson, terminalText } from './terminal.js';

/**
 * `harness explain <runId> [--artifact-root D] [--json]`: why a run cannot complete yet, one line
 * per problem from the bridge's completionPreview, plus (with a readable artifact root) the
 * bridge's artifact drift and access-token checks (localArtifactProblems) and the local
 * content-validator verdict, run in the same credential-free child as the gate. Each problem is
 * followed by its next step (`  fix: ...`, validators/next-step.ts); `--json` prints the same as
 * one array of `{problem, nodeId?, fix}`. A quarantined run prints its quarantine reasons instead.
 * Exit 0 ready, 1 blocked, quarantined or failed, 2 usage.
 */
export function registerExplain(program: Command): void {
  program
    .command('explain')
    .description('list what blocks completion of a run, one line per problem, each with its next step')
    .argument('<runId>')
    .option('--artifact-root <dir>', 'also run the content validators locally against this artifact root')
    .option('--json', 'print an array of {problem, nodeId?, fix}')
    .action(async (runId: string, opts: { artifactRoot?: string; json?: boolean }) => {
      refuseIntegrityKey('harness explain');
      if (!RUN_ID_PATTERN.test(runId)) throw new UsageError('the run ID is not canonical');
      const token = requireEnv('HARNESS_BRIDGE_ACCESS_TOKEN');
      const r = await bridgeRequest(`/runs/${runId}?eventLimit=1`, {
        headers: { 'x-harness-bridge-token': token },
      });
      if (r.body['ok'] !== true) {
        process.stderr.write(`${describeFailure(r)}\n`);
        process.exitCode = 1;
        return;
      }
      const run = r.body['run'] as RunReadT | QuarantinedRunReadT;
      const print = (steps: readonly NextStep[], done: string) => {
        if (opts.json) process.stdout.write(`${terminalJson(steps)}\n`);
        else if (steps.length === 0) process.stdout.write(`${done}\n`);
        for (const s of opts.json ? [] : steps)
          process.stdout.write(`${terminalText(s.problem)}\n  fix: ${terminalText(s.fix)}\n`);
        process.exitCode = steps.length === 0 ? 0 : 1;
      };
      if (run.status === 'quarantined') {
        // A quarantined run is read as its summary and reasons only: there is no completion
        // preview, and no facts from its untrusted record to run the local validators on.
        const reasons = run.quarantine?.reasons ?? [];
        const lines = (reasons.length > 0 ? reasons : ['the run is quarantined']).map(
          (q) => `quarantined: ${q}`,
        );
        print(
          lines.map((l) => unlisted(l, 'quarantined')),
          '',
        );
        return;
      }
      let local: { problems: Problem[]; ctx: FixContext } | null = null;
      if (opts.artifactRoot !== undefined) {
        const realRoot = await realArtifactRoot(opts.artifactRoot);
        // The local checks judge the run only under the root it sealed. A run view carries no
        // absolute path, so the bridge is asked: POST /runs with the same root is answered 200
        // and changes nothing; another root is 409 naming artifactRoot. A run without a sealed
        // root is not asked (that request would seal one).
        if (!run.artifactRootSet) {
          process.stderr.write(
            `harness explain: run ${runId} has no artifact root sealed yet; nothing to check under ${terminalText(realRoot)}\n`,
          );
          process.exitCode = 1;
          return;
        }
        const same = await bridgeRequest('/runs', {
          method: 'POST',
          body: { id: runId, artifactRoot: realRoot },
          headers: { 'x-harness-bridge-token': token },
        });
        if (same.status !== 200) {
          process.stderr.write(`${describeFailure(same)}\n`);
          process.exitCode = 1;
          return;
        }
        const check = createFinishLineCheck({ concurrency: 1, deadlineMs: 120_000 });
        const facts = factsFromView(run, realRoot);
        const problems = [
          ...(await localArtifactProblems(facts, realRoot, token)),
          ...(await check(facts, { realRoot, repoRoot: repoRootFromEnv(), trustPin: run.trustPin })),
        ];
        local = { problems, ctx: { facts, root: realRoot } };
        const partial = partialApprovalsNote(run);
        if (partial !== null) process.stderr.write(`note: ${partial}\n`);
      }
      const found = previewAndLocalSteps(run.completionPreview, local);
      const steps = [...found.bridge, ...found.local.map((s) => ({ ...s, problem: `local: ${s.problem}` }))];
      if (steps.length === 0 && run.status !== 'completed' && !run.completionPreview.ready)
        steps.push(unlisted('the bridge reports the run is not ready'));
      // The bridge's preview holds the structural rules only: the content rules (proof, review,
      // packet, ...) run at run.completed, or here under the artifact root.
      if (steps.length === 0 && run.status !== 'completed' && local === null)
        process.stderr.write(
          `note: the content rules were not run; \`harness explain ${runId} --artifact-root ${placeholder('artifact-root')}\` runs them as run.completed will\n`,
        );
      print(steps, run.status === 'completed' ? 'completed' : 'ready to complete');
    });
}
