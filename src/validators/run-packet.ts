import {
  AUTHORITATIVE_ASSURANCE_ID,
  type AuthoritativeAssurance,
  REVIEW_SCHEMA_ID,
  type Review,
  RUN_PACKET_V2_ID,
  RUN_PACKET_V3_ID,
  type RunPacketV3,
} from '../contract/artifacts/index.js';
import { PACKET_PATH } from './corrective-work.js';
import { type Loaded, loadJson, schemaIdOf, schemaProblems } from './documents.js';
import { canonicalBytes } from './evidence.js';
import type { ArtifactFacts, ContentRule, FinishLineEnv } from './facts.js';
import type { InputsOf } from './inputs.js';
import { selfDeclaredTrust } from './json-scan.js';
import { REVIEW_PATH } from './review.js';
import { readRoute } from './route-document.js';

const RANK = { structural: 0, semantic: 1, authoritative: 2 } as const;

/** The packet and the artifacts it binds (review, route, authoritative assurance), the review, the route. */
export const runPacketInputs: InputsOf = (facts) => ({
  files: [PACKET_PATH, REVIEW_PATH, facts.config.artifactByNode.route],
  documents: [PACKET_PATH],
});

/**
 * harness.run-packet.v3: v2 never completes; the packet binds this run, the review by its
 * current hash, the same role roster the reviewer signed, and the route; every semantic or
 * authoritative claim is covered by the authoritative-assurance artifact at its current bytes.
 * Each bound artifact is read once: the hash compared with the packet's reference is the hash of
 * the bytes parsed, so a swap between two reads cannot pass one check with each version.
 */
export const runPacket: ContentRule = async (facts, env) => {
  if (env.realRoot === null) return [`${PACKET_PATH} cannot be read: the run has no artifact root`];
  const root = env.realRoot;
  const loaded = await loadJson(root, PACKET_PATH, env.verified);
  if (loaded.kind === 'missing') return [`${PACKET_PATH} is missing`];
  if (loaded.kind === 'error') return [loaded.problem];
  if (schemaIdOf(loaded.value) === RUN_PACKET_V2_ID) {
    return [
      `${PACKET_PATH} is ${RUN_PACKET_V2_ID}, historical evidence only; completion needs ${RUN_PACKET_V3_ID}`,
    ];
  }
  return packetProblems(loaded.value, facts, { ...env, realRoot: root });
};

/**
 * Every problem of a v3 packet `value` against the artifacts it binds under `env.realRoot`: the
 * rule's check of the packet on disk, and `harness packet write`'s check of the packet it is about
 * to write (which is refused, never written, when this finds anything).
 */
export async function packetProblems(
  value: unknown,
  facts: ArtifactFacts,
  env: PacketEnv,
): Promise<string[]> {
  const root = env.realRoot;
  const problems = selfDeclaredTrust(value).map(
    (at) => `self-declared reviewer trust: ${PACKET_PATH} carries key or trust material at ${at}`,
  );
  const shape = schemaProblems(PACKET_PATH, RUN_PACKET_V3_ID, value);
  if (shape.length > 0) return [...problems, ...shape];
  const packet = value as RunPacketV3;
  if (packet.runId !== facts.runId) problems.push(`${PACKET_PATH} runId ${packet.runId} is not this run`);

  const review = await loadJson(root, REVIEW_PATH, env.verified);
  problems.push(...boundRef(packet.review, REVIEW_PATH, 'review', review));
  if (review.kind === 'ok' && schemaProblems(REVIEW_PATH, REVIEW_SCHEMA_ID, review.value).length === 0) {
    const roster = (review.value as Review).roster;
    if (!canonicalBytes(roster).equals(canonicalBytes(packet.roles))) {
      problems.push(`${PACKET_PATH} role provenance differs from the roster the reviewer signed`);
    }
  }

  const route = await readRoute(facts, root, env.verified);
  problems.push(...boundRef(packet.route.artifact, route.path, 'route', route.loaded));
  if (route.route) {
    if (packet.route.routeId !== route.route.routeId) problems.push(`${PACKET_PATH} names another routeId`);
    if (packet.route.goalId !== route.route.goal.goalId) problems.push(`${PACKET_PATH} names another goalId`);
  }

  const ids = new Set<string>();
  for (const c of packet.catalogs) {
    if (ids.has(c.id)) problems.push(`${PACKET_PATH} resolves catalog ${c.id} twice`);
    ids.add(c.id);
  }
  problems.push(...(await assurance(root, packet, facts.runId, env)));
  return problems;
}

/** What packetProblems reads: the real artifact root, and the bridge's digests when it has them. */
export type PacketEnv = Pick<FinishLineEnv, 'verified'> & { realRoot: string };

/** The packet's reference to `expectedPath` against the one read of it (`current`). */
function boundRef(
  ref: { path: string; sha256: string },
  expectedPath: string,
  what: string,
  current: Loaded,
): string[] {
  if (ref.path !== expectedPath) return [`${PACKET_PATH} binds ${what} ${ref.path}, not ${expectedPath}`];
  if (current.kind === 'missing') return [`${PACKET_PATH} ${what}: ${ref.path} does not exist`];
  // Bytes that are not JSON still have a digest; a read that failed has none.
  if (current.kind === 'error' && current.sha256 === undefined)
    return [`${PACKET_PATH} ${what}: ${current.problem}`];
  return current.sha256 === ref.sha256
    ? []
    : [`${PACKET_PATH} binds an earlier ${what} (${ref.path} changed)`];
}

async function assurance(
  root: string,
  packet: RunPacketV3,
  runId: string,
  env: PacketEnv,
): Promise<string[]> {
  const problems: string[] = [];
  const strong = packet.claims.filter((c) => c.kind !== 'structural');
  for (const c of strong) {
    if (RANK[c.kind] > RANK[packet.assuranceLevel]) {
      problems.push(`claim ${c.id} is ${c.kind} but the packet assurance level is ${packet.assuranceLevel}`);
    }
  }
  if (strong.length === 0 && packet.assuranceLevel === 'structural') return problems;
  const ref = packet.authoritativeAssurance;
  if (!ref)
    return [...problems, 'semantic or authoritative claims need the authoritative-assurance artifact'];
  // One read: the digest compared with the packet's reference is that of the bytes validated.
  const current = await loadJson(root, ref.path, env.verified);
  if (current.kind === 'missing') return [...problems, `authoritative assurance: ${ref.path} does not exist`];
  if (current.kind === 'error' && current.sha256 === undefined)
    return [...problems, `authoritative assurance: ${current.problem}`];
  if (current.sha256 !== ref.sha256)
    problems.push(`authoritative assurance ${ref.path} changed after packing`);
  if (current.kind === 'error') return [...problems, current.problem];
  const shape = schemaProblems(ref.path, AUTHORITATIVE_ASSURANCE_ID, current.value);
  if (shape.length > 0) return [...problems, ...shape];
  const doc = current.value as AuthoritativeAssurance;
  if (doc.runId !== runId) problems.push(`authoritative assurance ${ref.path} is not bound to this run`);
  if (RANK[doc.level] < RANK[packet.assuranceLevel]) {
    problems.push(`authoritative assurance level ${doc.level} is below ${packet.assuranceLevel}`);
  }
  const covered = new Set(doc.claimIds);
  for (const c of strong) {
    if (!covered.has(c.id)) problems.push(`claim ${c.id} is not covered by the authoritative assurance`);
  }
  return problems;
}
