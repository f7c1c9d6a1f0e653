import { createHash } from 'node:crypto';
import { NAMED_PATHS_MAX } from '../contract/index.js';
import type { OpenRun } from '../storage/types.js';
import { checkedByName } from '../validators/finish-line.js';
import { comparePaths } from '../validators/inventory.js';
import { changedWhileChecked } from '../validators/verified-bytes.js';
import { DIGEST_CACHE_TTL_MS } from '../workers/digest-cache.js';
import type { ClaimResult, HashPool } from '../workers/pool.js';
import type { StatInventory } from '../workers/stat-inventory.js';
import type { ArtifactCheck, BridgeContext } from './context.js';

export type { ArtifactCheck };

/**
 * Each artifact path named inside `documents` (the referenced documents, CONTRACT 6: "paths named
 * inside the packet, review and rca documents", and any other document a rule of the run reads the
 * references of: the local self-heal proposal), with the first document naming it. A document that is
 * missing, too large or not JSON names nothing; its own bytes are still scanned. Past
 * NAMED_PATHS_MAX paths together, none is kept and the run gets one problem instead, so it can
 * neither complete nor stay completed. The documents are read in the pool (HashPool.documentRefs,
 * without building their values), never on this thread; what is kept here is a path and the
 * document naming it per named path, and the paths are checked batch by batch (claimEach).
 */
async function namedPaths(
  pool: HashPool,
  root: string,
  documents: readonly string[],
): Promise<{ named: Map<string, string>; tooMany: string | null; read: Map<string, string | null> }> {
  const named = new Map<string, string>();
  const refs = await pool.documentRefs(root, documents);
  // Which bytes each document's references came from (null: none could be read).
  const read = new Map(refs.map((r, i) => [documents[i] as string, r.sha256]));
  for (const [i, { paths }] of refs.entries()) {
    const doc = documents[i] as string;
    // null: this document alone names more than NAMED_PATHS_MAX.
    for (const path of paths ?? []) if (!named.has(path)) named.set(path, doc);
    if (paths === null || named.size > NAMED_PATHS_MAX) {
      const who = paths === null ? `${doc} names` : `${documents.join(', ')} name`;
      return { named: new Map(), tooMany: `${who} more than ${NAMED_PATHS_MAX} artifact paths`, read };
    }
  }
  return { named, tooMany: null, read };
}

/**
 * Who is asking, for the wording: the completion gate (a claim drifted since it was verified) or
 * a completed-run read (it drifted after completion).
 */
export type CheckStage = 'gate' | 'read';

/**
 * What a completion seals of the files its gate read beyond the claimed artifacts (whose claims
 * carry their digests): each document and by-name input, with its digest or null when absent,
 * and one digest over every path the documents name (a review inventory can name thousands, and
 * the sealed record must fit the journal's record ceiling).
 */
export interface DocumentSeal {
  documents: Record<string, string | null>;
  named: string;
}

/**
 * A check's digests, once per check: a kept check (rootChecks) answers many reads, and sorting
 * the digests of some 20000 named files took longer than the rest of such a read.
 */
const memo = new WeakMap<ArtifactCheck, { named?: string; digests?: string }>();
function memoOf(check: ArtifactCheck) {
  const m = memo.get(check) ?? {};
  memo.set(check, m);
  return m;
}

function namedDigest(check: ArtifactCheck): string {
  const m = memoOf(check);
  if (m.named === undefined) {
    const pairs = [...check.named].sort().map((path) => [path, check.digests.get(path) ?? null]);
    // JSON.stringify, not canonical JSON: a named path may hold a lone surrogate, which canonical
    // JSON cannot encode; an array of strings and nulls serializes one way only.
    m.named = createHash('sha256').update(JSON.stringify(pairs)).digest('hex');
  }
  return m.named;
}

/** One digest over every path's digest in the check (the verdict cache key binds them). */
export function digestsDigest(check: ArtifactCheck): string {
  const m = memoOf(check);
  if (m.digests === undefined) {
    const pairs = [...check.digests].sort((a, b) => comparePaths(a[0], b[0]));
    m.digests = createHash('sha256').update(JSON.stringify(pairs)).digest('hex');
  }
  return m.digests;
}

export function documentSeal(check: ArtifactCheck): DocumentSeal {
  const documents: Record<string, string | null> = {};
  for (const path of [...check.byName].sort()) documents[path] = check.digests.get(path) ?? null;
  return { documents, named: namedDigest(check) };
}

/**
 * SPEC: byte drift quarantines a completed run. Claims carry their own digests; this compares the
 * other files the gate decided on with what the completion sealed, so a packet or RCA rewritten
 * after completion (valid or not) is drift too. A seal from before this check has no documents.
 */
export function documentDrift(seal: Partial<DocumentSeal>, check: ArtifactCheck): string[] {
  const problems: string[] = [];
  for (const [path, sealed] of Object.entries(seal.documents ?? {})) {
    const now = check.digests.get(path) ?? null;
    if (now === sealed) continue;
    if (sealed === null) problems.push(`finish-line document ${path} appeared after completion`);
    else if (now === null) problems.push(`finish-line document ${path} was removed after completion`);
    else problems.push(`finish-line document ${path} changed after completion`);
  }
  if (seal.named !== undefined && seal.named !== namedDigest(check))
    problems.push('a file the finish-line documents name changed after completion');
  return problems;
}

/**
 * The one artifact and privacy check of the completion gate and of completed-run reads (CONTRACT
 * 6): every artifact the journal claims (latest claim per path) is re-resolved and re-hashed
 * against its claim, and it, every referenced document and every artifact those documents name
 * are scanned for the bridge's credential values, in one pass in the hash pool. So is every file
 * the run's validators read by name (src/validators/inputs.ts), claimed or not, so that they decide
 * only on bytes hashed here (verifiedBy). A missing, escaping, unreadable, changed or
 * credential-bearing file is a problem; a referenced document or by-name input that does not
 * exist is not, but a path a document names must resolve inside the root.
 */
export async function checkArtifacts(
  ctx: BridgeContext,
  run: OpenRun,
  stage: CheckStage,
  /** A read's lstat inventory of the root, taken before this check (rootCheckKey). */
  walk: StatInventory | null = null,
): Promise<ArtifactCheck> {
  const root = run.config.artifactRoot;
  const digests = new Map<string, string>();
  const absent = new Set<string>();
  const problems: string[] = [];
  if (root === null) return { digests, absent, byName: [], named: [], problems };
  const needles = [ctx.env.accessToken, ctx.env.humanToken, ctx.env.integrityKey.toString('utf8')];
  const claimed = run.state.artifacts;
  const { documents, files } = checkedByName({ runId: run.runId, config: run.config, state: run.state });
  // A completed run's sealed documents are checked whatever the rules read now.
  const sealed = Object.keys(run.state.completionSeal?.documents ?? {});
  const byName = [...new Set([...documents, ...files, ...sealed])].filter((p) => !Object.hasOwn(claimed, p));
  const key = stage === 'read' && walk?.settled ? rootCheckKey(root, walk, needles, claimed, byName) : null;
  const kept = key === null ? null : ctx.rootChecks.get(key);
  if (kept) return kept;
  const { named, tooMany, read } = await namedPaths(ctx.pool, root, documents);
  if (tooMany !== null) problems.push(tooMany);
  const byNameSet = new Set(byName);
  const namedOnly = [...named.keys()].filter((p) => !Object.hasOwn(claimed, p) && !byNameSet.has(p));
  const paths = [...new Set([...Object.keys(claimed), ...byName, ...namedOnly])];
  const expected = Object.fromEntries(Object.values(claimed).map((a) => [a.path, a.sha256]));
  // A read takes the digest of a file whose identity is unchanged from the digest cache; the gate
  // re-hashes everything (SPEC rule 10).
  // Folded batch by batch (claimEach): a root of a million named files leaves its digests, not a
  // million result objects.
  const take = (r: ClaimResult) => {
    const claim = claimed[r.path];
    const namedIn = named.get(r.path);
    if (!r.ok) {
      if (claim && stage === 'gate') problems.push(`artifact ${r.path} cannot be re-verified: ${r.message}`);
      else if (claim) problems.push(`artifact ${r.path}: ${r.message}`);
      else if (namedIn) problems.push(`artifact ${r.path} named in ${namedIn}: ${r.message}`);
      else if (!r.missing) problems.push(`artifact ${r.path}: ${r.message}`);
      else absent.add(r.path);
      return;
    }
    digests.set(r.path, r.sha256);
    if (claim && claim.sha256 !== r.sha256) {
      problems.push(
        `artifact ${r.path} ${stage === 'gate' ? 'changed since it was verified' : 'changed after completion'}`,
      );
    }
    if (r.leaked) problems.push(`artifact ${r.path} contains a bridge credential value`);
  };
  // The earliest moment a digest of this check was read from its file, and whether every file
  // had settled then (a digest the per-file cache would keep).
  let readAt = Number.POSITIVE_INFINITY;
  let settled = true;
  await ctx.pool.claimEach(root, paths, { needles, expected, cached: stage === 'read' }, (batch) => {
    for (const r of batch) {
      take(r);
      if (!r.ok) continue;
      readAt = Math.min(readAt, r.hashedAt ?? Number.NEGATIVE_INFINITY);
      settled &&= r.identity !== undefined;
    }
  });
  // The paths checked are those the documents named when they were parsed: if a document's bytes
  // changed before this pass hashed it, what the hashed bytes name was never checked.
  for (const [doc, parsed] of read) {
    if (parsed !== (digests.get(doc) ?? null)) problems.push(changedWhileChecked(doc));
  }
  const check = { digests, absent, byName, named: namedOnly, problems: problems.sort() };
  // Kept only when nothing under the root moved while it was checked (the same inventory after
  // as before) and nothing is wrong: a problem is checked again on every read.
  if (key !== null && root !== null && settled && problems.length === 0) {
    const after = await ctx.pool.statInventory(root);
    if (after?.settled && after.digest === walk?.digest)
      ctx.rootChecks.set(key, check, paths.length, Math.min(readAt, Date.now()) + DIGEST_CACHE_TTL_MS);
  }
  return check;
}

/**
 * What a read's whole check depends on besides the bytes under the root: the root and its lstat
 * inventory (equal and settled: no entry changed, so every file opens as it did, through the same
 * directories, with the same bytes), the credential values scanned for, each claim's digest and
 * the paths checked by name. The paths the documents name follow from the documents' bytes.
 */
function rootCheckKey(
  root: string,
  walk: StatInventory,
  needles: readonly string[],
  claimed: OpenRun['state']['artifacts'],
  byName: readonly string[],
): string {
  const claims = Object.values(claimed)
    .map((a) => [a.path, a.sha256])
    .sort((a, b) => comparePaths(a[0] as string, b[0] as string));
  return createHash('sha256')
    .update(JSON.stringify([root, walk.digest, needles, claims, [...byName].sort(comparePaths)]))
    .digest('hex');
}
