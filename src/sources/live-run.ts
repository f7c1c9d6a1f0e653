import type { RunViewT } from '../contract/index.js';
import { type BridgeAnswer, type BridgeCall, refusalLine, SourceError } from './client.js';

/** How long one request may take before the bridge counts as unreachable (a source never hangs). */
const ANSWER_MS = 10_000;

/**
 * A bridge answer, or null when none came: nothing listening, a reset, or past the deadline, which
 * is the request's own (it is abandoned, not left running). A usage problem (SourceError) is thrown.
 */
export async function ask(
  call: BridgeCall,
  path: string,
  init: { method: string; body?: unknown },
): Promise<BridgeAnswer | null> {
  try {
    return await call(path, { ...init, timeoutMs: ANSWER_MS });
  } catch (err) {
    if (err instanceof SourceError) throw err;
    return null;
  }
}

/** No answer, or a busy or broken bridge: worth asking again. */
export const unanswered = (a: BridgeAnswer | null): boolean => a === null || a.status >= 500;

/**
 * The run as a live source (`harness watch`, `harness browser-relay`) needs it: it must exist
 * (else exit 1), be live or have no mode yet (else exit 2: a replay or blueprint run takes no live
 * events), and be neither completed nor quarantined (exit 1). `doing` names the source in the
 * refusal ("watch", "relay to"). Null: the bridge did not answer. Nothing is posted.
 */
export async function readLiveRun(call: BridgeCall, runId: string, doing: string): Promise<RunViewT | null> {
  const view = await ask(call, `/runs/${encodeURIComponent(runId)}?eventLimit=1`, { method: 'GET' });
  if (unanswered(view)) return null;
  if (view!.status !== 200) throw new SourceError(`cannot ${doing} run ${runId}: ${refusalLine(view!)}`, 1);
  const run = view!.body['run'] as RunViewT;
  if (run.status === 'completed' || run.status === 'quarantined')
    throw new SourceError(`run ${runId} is ${run.status}: it takes no more events`, 1);
  if (run.runMode !== null && run.runMode !== 'live')
    throw new SourceError(`run ${runId} is a ${run.runMode} run: it takes no live events`, 2);
  return run;
}
