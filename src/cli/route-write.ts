import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import { type Command, Option } from 'commander';
import { ROUTE_SCHEMA_ID, type Route, WORK_TYPES } from '../contract/artifacts/index.js';
import { RUN_ID_PATTERN } from '../contract/index.js';
import { claimArtifact } from '../validators/artifact-root.js';
import { schemaProblems } from '../validators/documents.js';
import { routeBindingProblems } from '../validators/route-binding.js';
import { UsageError } from './env.js';
import { refuseProblems, writeJsonArtifact } from './evidence-tools.js';
import { localArtifactMap, realArtifactRoot } from './local-paths.js';
import { terminalJson } from './terminal.js';

/**
 * `harness route write <runId> --artifact-root D --work-type T --goal G`: writes the run's route
 * (`harness.route.v1`, at the path the adapter configures for node `route`), bound to the run: the
 * route and its goal carry the run ID. The document is checked with the gate's own schema and
 * route-binding check before anything is written; a refusal writes nothing. An existing route is
 * kept unless `--replace`: the review's scout evidence binds it by hash.
 */
interface RouteOpts {
  artifactRoot: string;
  adapterPath?: string;
  workType: string;
  goal: string;
  summary?: string;
  routeId?: string;
  goalId?: string;
  lane?: string;
  requiresRca?: boolean;
  replace?: boolean;
}

export function routeDocument(runId: string, opts: RouteOpts, now = new Date()): Route {
  return {
    schema: ROUTE_SCHEMA_ID,
    routeId: opts.routeId ?? `${runId}.route`,
    runId,
    generatedAt: now.toISOString(),
    workType: opts.workType as Route['workType'],
    ...(opts.lane === undefined ? {} : { lane: opts.lane }),
    ...(opts.requiresRca ? { requiresRca: true } : {}),
    goal: { goalId: opts.goalId ?? `${runId}.goal`, runId, statement: opts.goal },
    summary: opts.summary ?? opts.goal,
  };
}

export function registerRoute(program: Command): void {
  const route = program.command('route').description('the run route (harness.route.v1)');
  route
    .command('write')
    .description("write the run's route, bound to the run, checked as the finish line checks it")
    .argument('<runId>')
    .requiredOption('--artifact-root <dir>', "the run's artifact root")
    .addOption(
      new Option('--work-type <type>', 'bug, regression, incident and self-heal need the RCA chain')
        .choices(WORK_TYPES)
        .makeOptionMandatory(),
    )
    .requiredOption('--goal <text>', 'what done means (goal.statement)')
    .option('--summary <text>', 'why this route (default: the goal)')
    .option('--route-id <id>', 'default: <runId>.route')
    .option('--goal-id <id>', 'default: <runId>.goal')
    .option('--lane <id>')
    .option('--requires-rca', 'demand the RCA chain for non-corrective work')
    .option('--adapter-path <path>', 'the adapter whose artifactByNode.route names the path')
    .option('--replace', 'overwrite an existing route (sign the review again afterwards)')
    .action(async (runId: string, opts: RouteOpts) => {
      if (!RUN_ID_PATTERN.test(runId)) throw new UsageError('the run ID is not canonical');
      const root = await realArtifactRoot(opts.artifactRoot);
      const path = (await localArtifactMap(root, opts.adapterPath)).route;
      const doc = routeDocument(runId, opts);
      const shape = schemaProblems(path, ROUTE_SCHEMA_ID, doc);
      refuseProblems(path, shape.length > 0 ? shape : routeBindingProblems(doc, runId));
      if (!opts.replace && (await lstat(join(root, path)).catch(() => null)) !== null)
        throw new UsageError(
          `${path} already exists; --replace overwrites it (then sign the review again: it binds the route)`,
        );
      await writeJsonArtifact(root, path, doc);
      const { sha256 } = await claimArtifact(root, path);
      process.stdout.write(`${terminalJson({ ok: true, path, sha256, routeId: doc.routeId })}\n`);
    });
}
