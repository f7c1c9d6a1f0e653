import type { ArtifactClaim, RunViewT } from '../contract/index.js';
import { type BridgeAnswer, type BridgeCall, refusalLine, SourceError } from './client.js';
import { ask, readLiveRun, unanswered } from './live-run.js';

/** For an event also a token refused: a bridge restarted with other credentials; readRun tells. */
const passing = (a: BridgeAnswer | null) => unanswered(a) || a!.status === 401;

/**
 * The run as the watcher needs it, read again after every outage: a live run (readLiveRun), and
 * `realRoot` must be its sealed artifact root.
 * `POST /runs {id, artifactRoot}` answers 200 only when that path resolves to the root sealed into
 * the run (409 when it differs); on a run with no root and no events yet it seals it, as
 * `harness emit --artifact-root` would. Nothing is appended. Null: the bridge did not answer.
 */
export async function readRun(call: BridgeCall, runId: string, realRoot: string): Promise<RunViewT | null> {
  const run = await readLiveRun(call, runId, 'watch');
  if (run === null) return null;
  const root = await ask(call, '/runs', { method: 'POST', body: { id: runId, artifactRoot: realRoot } });
  if (unanswered(root)) return null;
  if (root!.status === 409 && root!.body['error'] === 'run_already_exists')
    throw new SourceError(`--root is not the artifact root of run ${runId}: ${refusalLine(root!)}`, 2);
  if (root!.status >= 300) throw new SourceError(`cannot watch run ${runId}: ${refusalLine(root!)}`, 1);
  return run;
}

/** The run's last recorded claim of each path: path -> sha256. */
export function recordedClaims(run: RunViewT): Map<string, string> {
  return new Map(run.artifacts.map((a) => [a.path, a.sha256]));
}

export type Posted =
  | { kind: 'stored'; seq: number; sha256: string; duplicate: boolean }
  | { kind: 'refused'; why: string }
  | { kind: 'closed'; why: string }
  | { kind: 'down' };

/**
 * Posts one `artifact.written` (live, source `watched-artifact`) for a settled change. The id and
 * `ts` follow from the bytes and the file's mtime, so posting the same change again (after an
 * outage, or by a second watcher) is answered as a duplicate and stores nothing. The bridge hashes
 * the file again itself; its claim is what it answers.
 */
export async function postClaim(
  call: BridgeCall,
  runId: string,
  nodeId: string,
  claim: ArtifactClaim,
): Promise<Posted> {
  const mtime = Math.floor(claim.mtimeMs);
  const event = {
    id: `watched-${nodeId}-${claim.sha256.slice(0, 32)}-${claim.size}-${mtime}`,
    ts: new Date(mtime).toISOString(),
    type: 'artifact.written',
    actor: 'harness',
    runMode: 'live',
    eventSource: 'watched-artifact',
    nodeId,
    artifact: claim.path,
    status: 'ok',
    message: `${claim.path} written (seen by harness watch)`,
  };
  const a = await ask(call, `/runs/${encodeURIComponent(runId)}/events`, { method: 'POST', body: event });
  if (passing(a)) return { kind: 'down' };
  const answer = a!;
  if (answer.status < 300) {
    const stored = (answer.body['event'] as { claim?: { sha256?: string } } | undefined)?.claim?.sha256;
    return {
      kind: 'stored',
      seq: Number(answer.body['seq']),
      sha256: stored ?? claim.sha256,
      duplicate: answer.body['duplicate'] === true,
    };
  }
  const code = answer.body['error'];
  if (code === 'run_closed' || code === 'run_quarantined')
    return { kind: 'closed', why: refusalLine(answer) };
  return { kind: 'refused', why: refusalLine(answer) };
}
