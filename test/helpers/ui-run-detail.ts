import type { RunDetail } from '../../src/ui/web/src/api.js';

/**
 * A run view as the web app's pure functions read it: a running run with nothing in it, and
 * `over` on top. The parts a function does not read do not change what it says.
 */
export function runDetail(over: Partial<RunDetail>): RunDetail {
  const selfHeal = { detected: false, resolved: false, detectedSeq: null, resolvedSeq: null };
  return {
    id: 'r1',
    status: 'running',
    approvals: [],
    nodes: [],
    selfHeal: { ...selfHeal, prUrl: null, artifact: null },
    completionPreview: { ready: false, problems: [], steps: [] },
    ...over,
  } as RunDetail;
}
