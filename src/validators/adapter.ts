import { createHash } from 'node:crypto';
import { lstat, realpath } from 'node:fs/promises';
import { delimiter, isAbsolute, relative, resolve, sep } from 'node:path';
import {
  ADAPTER_ARTIFACT_PATHS_MAX_BYTES,
  ALWAYS_REQUIRED,
  artifactPathProblems,
  DEFAULT_ARTIFACT_BY_NODE,
  isNodeId,
  NODE_IDS,
  type NodeId,
} from '../contract/index.js';
import type { AdapterRecord } from '../contract/run-config.js';
import { readArtifact } from './artifact-root.js';

/**
 * HARNESS_ADAPTER_ROOTS as the bridge and the CLI evidence tools both read it: split on the path
 * delimiter, empty entries dropped, each entry resolved against the working directory, so a
 * relative root names the same directory to both.
 */
export function adapterRootsFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env['HARNESS_ADAPTER_ROOTS'] ?? '')
    .split(delimiter)
    .filter((p) => p !== '')
    .map((p) => resolve(p));
}

/**
 * Project adapters (SPEC "Project adapter", CONTRACT section 5). The adapter path is
 * agent-supplied: it must resolve inside the artifact root, HARNESS_REPO_ROOT or an
 * HARNESS_ADAPTER_ROOTS entry, and it is opened through artifact-root.ts, so no component below
 * the root may be a link (a link pointing back inside is refused too: it is never needed and is
 * how escapes start). Only runtime.requiredNodes, runtime.artifactByNode,
 * finishLineAssurance.required and finishLineAssurance.ignoredMayChange are consumed; other fields
 * are ignored.
 */
export const ADAPTER_FILE = 'project-adapter.json';
/** What a completion seal adds to each artifact path: `:"<64 hex digits>",`. */
const SEAL_ENTRY_BYTES = 68;
export const ADAPTER_MAX_BYTES = 256 * 1024;

export class AdapterPolicyError extends Error {
  override readonly name = 'AdapterPolicyError';
  readonly code = 'adapter_policy_violation' as const;
}

export interface ResolvedAdapter {
  record: AdapterRecord;
  requiredNodes: NodeId[];
  artifactByNode: Record<NodeId, string>;
}

export interface RunShape {
  requiredNodes: NodeId[];
  artifactByNode: Record<NodeId, string>;
}

export function defaultRunShape(): RunShape {
  return { requiredNodes: [...NODE_IDS], artifactByNode: { ...DEFAULT_ARTIFACT_BY_NODE } };
}

interface Root {
  kind: AdapterRecord['rootKind'];
  lexical: string;
  real: string;
}

async function rootsOf(opts: ResolveOptions): Promise<Root[]> {
  const out: Root[] = [];
  const add = async (kind: Root['kind'], dir: string | null) => {
    if (!dir || !isAbsolute(dir)) return;
    const real = await realpath(dir).catch(() => null);
    if (real) out.push({ kind, lexical: resolve(dir), real });
  };
  await add('artifact-root', opts.realArtifactRoot);
  await add('repo-root', opts.repoRoot);
  for (const r of opts.adapterRoots) await add('adapter-root', r);
  return out;
}

function inside(root: string, candidate: string): string | null {
  const rel = relative(root, candidate);
  if (rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return null;
  return rel.split(sep).join('/');
}

export interface ResolveOptions {
  adapterPath: string | undefined;
  realArtifactRoot: string | null;
  repoRoot: string;
  adapterRoots: string[];
}

export async function resolveAdapter(opts: ResolveOptions): Promise<ResolvedAdapter | null> {
  const roots = await rootsOf(opts);
  let candidate: string;
  if (opts.adapterPath === undefined) {
    if (opts.realArtifactRoot === null) return null;
    candidate = `${opts.realArtifactRoot}${sep}${ADAPTER_FILE}`;
    // Absent is fine; anything present (even a dangling link) goes through the policy below.
    if (
      !(await lstat(candidate).then(
        () => true,
        () => false,
      ))
    )
      return null;
  } else {
    if (opts.adapterPath === '' || opts.adapterPath.includes('\0')) {
      throw new AdapterPolicyError('adapterPath is empty or contains NUL');
    }
    // Relative paths are taken from the artifact root when there is one, else the repository root.
    candidate = resolve(opts.realArtifactRoot ?? opts.repoRoot, opts.adapterPath);
  }
  for (const root of roots) {
    const rel = inside(root.lexical, candidate) ?? inside(root.real, candidate);
    if (rel === null) continue;
    let bytes: Buffer;
    try {
      bytes = await readArtifact(root.real, rel, ADAPTER_MAX_BYTES);
    } catch (err) {
      throw new AdapterPolicyError(`adapter ${rel}: ${err instanceof Error ? err.message : String(err)}`);
    }
    return parseAdapter(bytes, {
      rootKind: root.kind,
      path: `${root.real}${sep}${rel.split('/').join(sep)}`,
    });
  }
  throw new AdapterPolicyError(
    'adapterPath is outside the allowed roots (artifact root, HARNESS_REPO_ROOT, HARNESS_ADAPTER_ROOTS)',
  );
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export function parseAdapter(
  bytes: Buffer,
  where: Pick<AdapterRecord, 'rootKind' | 'path' | 'committed'>,
): ResolvedAdapter {
  let doc: unknown;
  try {
    doc = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new AdapterPolicyError('the adapter is not valid JSON');
  }
  if (!isObject(doc)) throw new AdapterPolicyError('the adapter must be a JSON object');
  const problems: string[] = [];
  const runtime = doc['runtime'];
  if (runtime !== undefined && !isObject(runtime)) problems.push('runtime must be an object');
  const rt = isObject(runtime) ? runtime : {};
  const shape = defaultRunShape();

  const req = rt['requiredNodes'];
  if (req !== undefined) {
    if (!Array.isArray(req) || req.some((n) => typeof n !== 'string')) {
      problems.push('runtime.requiredNodes must be an array of node ids');
    } else {
      for (const n of req as string[])
        if (!isNodeId(n)) problems.push(`runtime.requiredNodes: unknown node id ${n}`);
      const wanted = new Set<string>([...(req as string[]), ...ALWAYS_REQUIRED]);
      shape.requiredNodes = NODE_IDS.filter((id) => wanted.has(id));
    }
  }
  const map = rt['artifactByNode'];
  if (map !== undefined) {
    if (!isObject(map)) problems.push('runtime.artifactByNode must be an object');
    else {
      for (const [node, path] of Object.entries(map)) {
        if (!isNodeId(node)) problems.push(`runtime.artifactByNode: unknown node id ${node}`);
        else if (typeof path !== 'string' || path === '' || path.length > 1024) {
          problems.push(`runtime.artifactByNode.${node} must be a non-empty path`);
        } else {
          const bad = artifactPathProblems(path);
          if (bad.length > 0) problems.push(...bad.map((p) => `runtime.artifactByNode.${node}: ${p}`));
          else shape.artifactByNode[node] = path;
        }
      }
    }
  }
  const sealed = Object.values(shape.artifactByNode).reduce(
    (sum, path) => sum + Buffer.byteLength(JSON.stringify(path)) + SEAL_ENTRY_BYTES,
    0,
  );
  if (sealed > ADAPTER_ARTIFACT_PATHS_MAX_BYTES) {
    problems.push(
      `runtime.artifactByNode: its paths take ${sealed} bytes as a completion seals them; at most ${ADAPTER_ARTIFACT_PATHS_MAX_BYTES}`,
    );
  }
  const fla = doc['finishLineAssurance'];
  let required = false;
  if (fla !== undefined) {
    if (!isObject(fla) || (fla['required'] !== undefined && typeof fla['required'] !== 'boolean')) {
      problems.push('finishLineAssurance.required must be a boolean');
    } else required = fla['required'] === true;
  }
  const mayChange = isObject(fla) ? ignoredMayChange(fla['ignoredMayChange'], problems) : [];
  if (problems.length > 0) throw new AdapterPolicyError(`invalid adapter: ${problems.join('; ')}`);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const record = { ...where, sha256, finishLineAssurance: required };
  return { record: mayChange.length > 0 ? { ...record, ignoredMayChange: mayChange } : record, ...shape };
}

export const IGNORED_MAY_CHANGE_MAX = 100;

/**
 * `finishLineAssurance.ignoredMayChange`: at most IGNORED_MAY_CHANGE_MAX picomatch globs of at
 * most 256 characters, relative (no leading `/`), without `..`, `\` or NUL. Sealed with the run.
 */
function ignoredMayChange(value: unknown, problems: string[]): string[] {
  if (value === undefined) return [];
  const where = 'finishLineAssurance.ignoredMayChange';
  if (!Array.isArray(value) || value.length > IGNORED_MAY_CHANGE_MAX) {
    problems.push(`${where} must be an array of at most ${IGNORED_MAY_CHANGE_MAX} globs`);
    return [];
  }
  for (const glob of value) {
    const ok =
      typeof glob === 'string' &&
      glob.length > 0 &&
      glob.length <= 256 &&
      !glob.startsWith('/') &&
      !/[\\\0]/.test(glob) &&
      !glob.split('/').includes('..');
    if (!ok) problems.push(`${where}: ${JSON.stringify(glob)} is not a relative glob without ..`);
  }
  return problems.some((p) => p.startsWith(where)) ? [] : (value as string[]);
}
