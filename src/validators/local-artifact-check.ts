import { documentRefsHere } from '../workers/document-refs.js';
import { claimOne } from '../workers/tasks.js';
import type { RunFacts } from './facts.js';
import { checkedByName } from './finish-line.js';
import type { Problem } from './problem.js';

/**
 * What the bridge's artifact and privacy check (server/artifact-check.ts) would refuse a
 * completion for, as far as a client holding only the access token can tell, in the bridge's
 * words: each claimed artifact re-hashed against its claim, and it, each referenced document and
 * by-name validator input, and each artifact those documents name, scanned for the access
 * token's value. That is the credential an agent holds; the human token and the integrity key it
 * cannot leak, and this client does not hold them to look for. `harness explain` and
 * `harness.finish_line_check` run it before saying a run is ready.
 */
export async function localArtifactProblems(
  facts: RunFacts,
  realRoot: string,
  accessToken: string,
): Promise<Problem[]> {
  const needles = [accessToken];
  const problems: Problem[] = [];
  const claimed = Object.values(facts.state.artifacts);
  for (const claim of claimed) {
    const now = claimOne(realRoot, claim.path, needles);
    const at = { path: claim.path, nodeId: claim.nodeId };
    if (!now.ok) {
      problems.push({
        kind: 'artifact-unverifiable',
        ...at,
        text: `artifact ${claim.path} cannot be re-verified: ${now.message}`,
      });
      continue;
    }
    if (now.sha256 !== claim.sha256)
      problems.push({
        kind: 'artifact-changed',
        ...at,
        text: `artifact ${claim.path} changed since it was verified`,
      });
    if (now.leaked) problems.push(leaked(claim.path));
  }
  const { documents, files } = checkedByName(facts);
  const named = (await documentRefsHere(realRoot, documents)).flatMap((d) => d.paths ?? []);
  const skip = new Set(claimed.map((c) => c.path));
  for (const path of new Set([...documents, ...files, ...named])) {
    if (skip.has(path)) continue;
    const now = claimOne(realRoot, path, needles);
    if (now.ok && now.leaked) problems.push(leaked(path));
  }
  return problems;
}

const leaked = (path: string): Problem => ({
  kind: 'artifact-credential',
  path,
  text: `artifact ${path} contains a bridge credential value`,
});
