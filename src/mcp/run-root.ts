import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { RunViewT } from '../contract/index.js';
import { resolveRoot } from '../validators/artifact-root.js';
import type { McpSession } from './context.js';
import { bridgeFailure, failure, isSuccess } from './result.js';

export type Outcome<T> = { ok: true; value: T } | { ok: false; result: CallToolResult };

/** GET /runs/:id with the smallest event page: the tools need the run view, not its events. */
export async function fetchRunView(session: McpSession, runId: string): Promise<Outcome<RunViewT>> {
  const res = await session.request('GET', `/runs/${encodeURIComponent(runId)}?eventLimit=1`);
  if (!isSuccess(res)) return { ok: false, result: bridgeFailure(res) };
  return { ok: true, value: res.body['run'] as RunViewT };
}

/**
 * The real artifact root of a run, as the agent names it (`given`, else the root this session
 * saw accepted), resolved here once and cross-checked with the bridge: `POST /runs {id,
 * artifactRoot}` with the resolved path answers 200 only when it resolves to the one sealed into
 * the run (on a run with no root and no events yet it seals it), and 409 `run_already_exists` when
 * it differs. The path the bridge confirmed is the path written under: resolving `given` again
 * after the check would let a link swapped in between point the write elsewhere. Nothing is
 * appended to the journal, so a wrong root is caught before a byte is written rather than after
 * the bridge looks elsewhere (or, worse, finds a stale file of the same name under the real root).
 */
export async function confirmedRoot(
  session: McpSession,
  runId: string,
  given: string | undefined,
): Promise<Outcome<string>> {
  const root = given ?? session.roots.get(runId);
  if (root === undefined) {
    return {
      ok: false,
      result: failure(
        'artifact_root_unknown',
        'this session does not know the artifact root of the run: pass artifactRoot',
        [
          `run ${runId}: no artifactRoot was given to harness.start_run or harness.emit_event in this session`,
        ],
      ),
    };
  }
  let real: string;
  try {
    real = await resolveRoot(root);
  } catch (err) {
    return {
      ok: false,
      result: failure('artifact_root_unknown', 'the artifact root cannot be resolved here', [
        err instanceof Error ? err.message : String(err),
      ]),
    };
  }
  const res = await session.request('POST', '/runs', { id: runId, artifactRoot: real });
  if (!isSuccess(res)) return { ok: false, result: bridgeFailure(res) };
  session.roots.set(runId, root);
  return { ok: true, value: real };
}
