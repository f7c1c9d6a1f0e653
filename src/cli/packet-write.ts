import { readFile, realpath } from 'node:fs/promises';
import type { Command } from 'commander';
import {
  PROOF_SCHEMA_ID,
  type Proof,
  RCA_SCHEMA_ID,
  type Rca,
  REVIEW_SCHEMA_ID,
  type Review,
  RUN_PACKET_V3_ID,
  type RunPacketV3,
} from '../contract/artifacts/index.js';
import { RUN_ID_PATTERN } from '../contract/index.js';
import { claimArtifact } from '../validators/artifact-root.js';
import { PACKET_PATH, RCA_PATH } from '../validators/corrective-work.js';
import { loadDocument } from '../validators/documents.js';
import type { ArtifactFacts } from '../validators/facts.js';
import { headCommit } from '../validators/git.js';
import { REVIEW_PATH, reviewProblems } from '../validators/review.js';
import { readRoute } from '../validators/route-document.js';
import { packetProblems } from '../validators/run-packet.js';
import { waivedLayerProblems } from '../validators/waivers.js';
import { UsageError } from './env.js';
import { refused, refuseProblems, writeJsonArtifact } from './evidence-tools.js';
import { localArtifactMap, realArtifactRoot, repoRootFromEnv } from './local-paths.js';
import { terminalJson } from './terminal.js';

/**
 * `harness packet write <runId> --artifact-root D`: writes `run/packet.json`
 * (`harness.run-packet.v3`) from what the run already holds, nothing typed by hand: the roster
 * the reviewer signed, the review and the route by their current hashes, the route and goal IDs,
 * and the commit the packet binds (the RCA's post-fix commit, which must be the commit the proof
 * ran at; else the proof's commit; else HEAD). The review and the packet are checked with the
 * gate's own review and run-packet rules, and waived layers against the waivers, before anything is
 * written; a refusal writes nothing. The packet is post-review: writing it again is always allowed.
 */
async function subjectCommit(root: string, facts: ArtifactFacts): Promise<string> {
  const proof = await loadDocument<Proof>(root, facts.config.artifactByNode.prove, PROOF_SCHEMA_ID);
  const rca = await loadDocument<Rca>(root, RCA_PATH, RCA_SCHEMA_ID);
  if (!rca.ok && !rca.missing) refused(PACKET_PATH, rca.problems);
  const proven = proof.ok ? (proof.value.subject?.commit ?? null) : null;
  const postFix = rca.ok ? rca.value.postFix.commit : null;
  if (postFix !== null && proven !== null && postFix !== proven)
    refused(PACKET_PATH, [
      `the proof ran at ${proven} but ${RCA_PATH} names the post-fix commit ${postFix}: run the proof at the post-fix commit`,
    ]);
  const commit = postFix ?? proven ?? (await headCommit(await realpath(repoRootFromEnv())));
  if (commit === null)
    throw new UsageError(`${PACKET_PATH} not written: no RCA, proof subject or HEAD names a commit`);
  return commit;
}

async function readWaivers(file: string | undefined): Promise<unknown[]> {
  if (file === undefined) return [];
  const text = await readFile(file, 'utf8').catch(() => {
    throw new UsageError('--waivers cannot be read');
  });
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new UsageError('--waivers is not valid JSON');
  }
  if (!Array.isArray(doc)) throw new UsageError('--waivers must hold a JSON array of waivers');
  return doc;
}

export function registerPacket(program: Command): void {
  const packet = program.command('packet').description('the run packet (harness.run-packet.v3)');
  packet
    .command('write')
    .description('write run/packet.json from the signed review, the route, the proof and the repository')
    .argument('<runId>')
    .requiredOption('--artifact-root <dir>', "the run's artifact root")
    .option('--adapter-path <path>', 'the adapter whose artifactByNode names the route and proof paths')
    .option(
      '--waivers <file>',
      'JSON array of waivers, each {waiverId, status, reason, approval: {nodeId, owner, scope}}',
    )
    .action(async (runId: string, opts: { artifactRoot: string; adapterPath?: string; waivers?: string }) => {
      if (!RUN_ID_PATTERN.test(runId)) throw new UsageError('the run ID is not canonical');
      const root = await realArtifactRoot(opts.artifactRoot);
      const facts: ArtifactFacts = {
        runId,
        config: { artifactByNode: await localArtifactMap(root, opts.adapterPath) },
      };
      const waivers = await readWaivers(opts.waivers);
      const review = await loadDocument<Review>(root, REVIEW_PATH, REVIEW_SCHEMA_ID);
      if (!review.ok) refused(PACKET_PATH, review.problems);
      refuseProblems(PACKET_PATH, await reviewProblems(facts, { realRoot: root }));
      const route = await readRoute(facts, root);
      if (!route.route || route.loaded.kind !== 'ok')
        refused(PACKET_PATH, route.present ? route.problems : [`${route.path} is missing`]);
      const doc = {
        schema: RUN_PACKET_V3_ID,
        runId,
        generatedAt: new Date().toISOString(),
        subject: { commit: await subjectCommit(root, facts) },
        route: {
          routeId: route.route.routeId,
          goalId: route.route.goal.goalId,
          artifact: { path: route.path, sha256: route.loaded.sha256 },
        },
        roles: review.value.roster,
        review: { path: REVIEW_PATH, sha256: review.sha256 },
        assuranceLevel: 'structural',
        catalogs: [],
        claims: [],
        waivers,
      } as RunPacketV3;
      const problems = await packetProblems(doc, facts, { realRoot: root });
      if (problems.length === 0) {
        const active = new Set(doc.waivers.filter((w) => w.status === 'active').map((w) => w.waiverId));
        problems.push(...(await waivedLayerProblems(facts, root, active)));
      }
      refuseProblems(PACKET_PATH, problems);
      await writeJsonArtifact(root, PACKET_PATH, doc);
      const { sha256 } = await claimArtifact(root, PACKET_PATH);
      process.stdout.write(
        `${terminalJson({ ok: true, path: PACKET_PATH, sha256, commit: doc.subject.commit })}\n`,
      );
    });
}
