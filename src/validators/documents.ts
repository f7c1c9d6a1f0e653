import { createHash } from 'node:crypto';
import { checkerFor } from '../contract/artifacts/index.js';
import { DOCUMENT_MAX_BYTES } from '../contract/index.js';
import { ArtifactError, readArtifact } from './artifact-root.js';
import { unverifiedRead, type VerifiedDigests } from './verified-bytes.js';

/**
 * Documents the bridge's privacy check covers beyond the claimed artifacts, when present, together
 * with every artifact they name (CONTRACT 6: "paths named inside the packet, review and rca
 * documents"). The RCA names no artifact: its `rootCause.location` is a repository path.
 */
export const REFERENCED_DOCUMENTS = ['run/packet.json', 'review/review.json', 'rca/rca.json'];

export type Loaded =
  | { kind: 'ok'; value: unknown; sha256: string; bytes: Buffer }
  | { kind: 'missing' }
  /** `sha256`: the digest of the bytes read, when they were read and are not JSON. */
  | { kind: 'error'; problem: string; sha256?: string };

/**
 * Reads one JSON artifact through artifact-root.ts (no links at any component, regular file,
 * inside the real root). A missing file is reported separately so callers decide if it matters.
 * The bytes are read once, hashed and parsed from that one buffer; with `verified` (what the
 * bridge hashed, verified-bytes.ts), bytes or an absence the bridge did not verify at that path
 * are an error, never parsed.
 */
export async function loadJson(
  realRoot: string,
  relPath: string,
  verified?: VerifiedDigests,
): Promise<Loaded> {
  let bytes: Buffer;
  try {
    bytes = await readArtifact(realRoot, relPath, DOCUMENT_MAX_BYTES);
  } catch (err) {
    if (err instanceof ArtifactError && err.message === `${relPath} does not exist`) {
      const problem = unverifiedRead(verified, relPath, null);
      return problem === null ? { kind: 'missing' } : { kind: 'error', problem };
    }
    return { kind: 'error', problem: err instanceof Error ? err.message : String(err) };
  }
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const problem = unverifiedRead(verified, relPath, sha256);
  if (problem !== null) return { kind: 'error', problem };
  try {
    return { kind: 'ok', value: JSON.parse(bytes.toString('utf8')), sha256, bytes };
  } catch {
    return { kind: 'error', problem: `${relPath} is not valid JSON`, sha256 };
  }
}

/** The document's declared schema id, if it is an object carrying a string `schema`. */
export function schemaIdOf(value: unknown): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const s = (value as { schema?: unknown }).schema;
  return typeof s === 'string' ? s : null;
}

/** Schema problems for `value` against `schemaId`, each prefixed with the artifact path. */
export function schemaProblems(relPath: string, schemaId: string, value: unknown): string[] {
  return checkerFor(schemaId)
    .problems(value)
    .map((p) => `${relPath} does not validate as ${schemaId}: ${p}`);
}

/**
 * Loads `relPath` and validates it as `schemaId`. Returns the typed value or the problems; a
 * missing file is a problem too ("<path> is missing").
 */
export async function loadDocument<T>(
  realRoot: string,
  relPath: string,
  schemaId: string,
  verified?: VerifiedDigests,
): Promise<{ ok: true; value: T; sha256: string } | { ok: false; problems: string[]; missing: boolean }> {
  const loaded = await loadJson(realRoot, relPath, verified);
  if (loaded.kind === 'missing') return { ok: false, problems: [`${relPath} is missing`], missing: true };
  if (loaded.kind === 'error') return { ok: false, problems: [loaded.problem], missing: false };
  const problems = schemaProblems(relPath, schemaId, loaded.value);
  if (problems.length > 0) return { ok: false, problems, missing: false };
  return { ok: true, value: loaded.value as T, sha256: loaded.sha256 };
}
