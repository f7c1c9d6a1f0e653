import { randomUUID } from 'node:crypto';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { BridgeResponse } from '../cli/http.js';
import type { EventSource, RunMode } from '../contract/index.js';
import { BridgeNoAnswer, type McpSession, type ToolDefinition } from './context.js';
import { bridgeFailure, isSuccess, success } from './result.js';
import { EmitEventInput, RequestApprovalInput, StartRunInput } from './schemas.js';

/** A live run reported through this server is `mcp`; other modes take their first source. */
const DEFAULT_SOURCE: Record<RunMode, EventSource> = {
  live: 'mcp',
  replay: 'local-jsonl',
  blueprint: 'static-blueprint',
};

/** Splits `runId` off the arguments; the rest is the HTTP body, with mode and source defaulted. */
export function eventBody(args: Record<string, unknown>): { runId: string; event: Record<string, unknown> } {
  const { runId, ...rest } = args;
  const runMode = (rest['runMode'] as RunMode | undefined) ?? 'live';
  return {
    runId: String(runId),
    event: { ...rest, runMode, eventSource: rest['eventSource'] ?? DEFAULT_SOURCE[runMode] },
  };
}

/**
 * Posts one event and answers with what the bridge stored (or its refusal, code and problems). The
 * event carries an id (a new UUID unless the agent gave one), so that when the bridge gives no
 * answer in time the failure names the id a retry must reuse to be answered as a duplicate.
 */
export async function postEventResult(
  session: McpSession,
  runId: string,
  given: Record<string, unknown>,
): Promise<{ res: BridgeResponse; result: CallToolResult }> {
  const event = { ...given, id: given['id'] ?? randomUUID() };
  let res: BridgeResponse;
  try {
    res = await session.postEvent(runId, event);
  } catch (err) {
    if (!(err instanceof BridgeNoAnswer)) throw err;
    throw new BridgeNoAnswer(
      `${err.message}; it may have stored event ${String(event.id)}: call again with "id": "${String(event.id)}"`,
    );
  }
  if (!isSuccess(res)) return { res, result: bridgeFailure(res) };
  const { ok: _ok, ...body } = res.body;
  return { res, result: success({ runId, ...body }) };
}

export const startRun: ToolDefinition = {
  name: 'harness.start_run',
  description:
    'Create a run on the bridge, or sync an existing one (POST /runs). Set artifactRoot (absolute) here or on the first event: artifacts can only be verified under it, it is sealed once set, and this session remembers it for harness.write_artifact. A repeat with the same fields returns the existing run; a differing field fails with run_already_exists.',
  inputSchema: StartRunInput,
  async run(session, args) {
    const { runId, ...rest } = args;
    const res = await session.request('POST', '/runs', { id: runId, ...rest });
    if (!isSuccess(res)) return bridgeFailure(res);
    if (typeof args['artifactRoot'] === 'string') session.roots.set(String(runId), args['artifactRoot']);
    return success({ created: res.body['created'] === true, run: res.body['run'] });
  },
};

export const emitEvent: ToolDefinition = {
  name: 'harness.emit_event',
  description:
    'Post one workflow event to a run (POST /runs/:id/events). Fields are the RunEvent contract; runMode defaults to live; eventSource defaults to mcp for live, local-jsonl for replay and static-blueprint for blueprint. Pass a node by emitting an event with nodeState passed (e.g. gate.fired, status passed). Conditional fields: skipped needs skipReason; failed needs failureReason and recoveryPath; needs_approval needs approvalOwner and approvalScope. run.completed is accepted only when the finish line holds (check first with harness.finish_line_check). approval.granted/denied need the human approval shell and are refused here.',
  inputSchema: EmitEventInput,
  async run(session, args) {
    const { runId, event } = eventBody(args);
    const { res, result } = await postEventResult(session, runId, event);
    if (isSuccess(res) && typeof args['artifactRoot'] === 'string') {
      session.roots.set(runId, args['artifactRoot']);
    }
    return result;
  },
};

export const requestApproval: ToolDefinition = {
  name: 'harness.request_approval',
  description:
    'Ask a human to approve a scoped action (approval.requested, status needs_approval): the node waits in needs_approval and the run cannot complete while the approval is pending. Only a human with the approval token can grant or deny it (harness approve). A second pending request with the same node, owner and scope is refused.',
  inputSchema: RequestApprovalInput,
  async run(session, args) {
    const { runId, event } = eventBody(args);
    const { result } = await postEventResult(session, runId, {
      ...event,
      type: 'approval.requested',
      status: 'needs_approval',
    });
    return result;
  },
};
