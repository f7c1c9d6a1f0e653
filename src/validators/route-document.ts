import { CORRECTIVE_WORK_TYPES, ROUTE_SCHEMA_ID, type Route } from '../contract/artifacts/index.js';
import { type Loaded, loadJson, schemaProblems } from './documents.js';
import type { ArtifactFacts } from './facts.js';
import type { VerifiedDigests } from './verified-bytes.js';

/**
 * Reads the configured route artifact. `corrective` is decided fail-closed: a route document that
 * claims a corrective workType (or requiresRca) needs the RCA chain even when the document is
 * otherwise invalid, so breaking the route cannot switch the chain off.
 */
export interface RouteRead {
  path: string;
  present: boolean;
  route: Route | null;
  /** The one read of the route the rest is decided on. */
  loaded: Loaded;
  problems: string[];
  corrective: boolean;
}

export async function readRoute(
  facts: ArtifactFacts,
  realRoot: string,
  verified?: VerifiedDigests,
): Promise<RouteRead> {
  const path = facts.config.artifactByNode.route;
  const loaded = await loadJson(realRoot, path, verified);
  if (loaded.kind === 'missing')
    return { path, present: false, route: null, loaded, problems: [], corrective: false };
  if (loaded.kind === 'error') {
    return { path, present: true, route: null, loaded, problems: [loaded.problem], corrective: false };
  }
  const doc = loaded.value as { workType?: unknown; requiresRca?: unknown } | null;
  const corrective =
    typeof doc === 'object' &&
    doc !== null &&
    ((typeof doc.workType === 'string' && CORRECTIVE_WORK_TYPES.includes(doc.workType)) ||
      doc.requiresRca === true);
  const problems = schemaProblems(path, ROUTE_SCHEMA_ID, loaded.value);
  return {
    path,
    present: true,
    route: problems.length === 0 ? (loaded.value as Route) : null,
    loaded,
    problems,
    corrective,
  };
}
