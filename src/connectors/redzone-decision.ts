import { callBridge } from './bridge-client.js';
import { type HookContext, refusal } from './context.js';
import { shellQuote } from './ours.js';
import type { RedZoneAction } from './redzone.js';
import { blockTool, type HookAnswer } from './table.js';

/**
 * A tool call a Red Zone rule holds: `approval.requested` at node `redzone` (once per distinct
 * action, not once per retry), then the tool is blocked until a human decides. After a grant the
 * same action is allowed, and recorded; after a denial it stays blocked with the denial's reason.
 * Every path without an answer from the bridge blocks: a Red Zone decision fails closed.
 */
type Decision =
  | { kind: 'none' }
  | { kind: 'pending' }
  | { kind: 'granted' }
  | { kind: 'denied'; reason: string }
  | { kind: 'no-answer'; why: string };

const POLL_MS = 1000;
/** Kept free under the runtime's hook timeout for the requests around the wait. */
const TIMEOUT_MARGIN_SECONDS = 30;

function describe(action: RedZoneAction): string {
  const text = action.text.length > 400 ? `${action.text.slice(0, 400)}...` : action.text;
  return action.kind === 'command'
    ? `the command \`${text}\``
    : action.kind === 'path'
      ? `a write to ${text}`
      : `the tool call ${text}`;
}

async function lookup(ctx: HookContext, action: RedZoneAction): Promise<Decision> {
  const path = `/runs/${encodeURIComponent(ctx.runId)}`;
  const a = await callBridge(ctx.client!, 'GET', `${path}?eventLimit=1`, undefined, ctx.config.deadlineMs);
  if (a.status === 404) return { kind: 'none' };
  if (a.status !== 200)
    return {
      kind: 'no-answer',
      why:
        a.status === 0 ? (a as { why: string }).why : refusal((a as { body: Record<string, unknown> }).body),
    };
  const approvals = ((a as { body: { run?: { approvals?: unknown } } }).body.run?.approvals ?? []) as {
    nodeId: string;
    owner: string;
    scope: string;
    status: string;
    decidedSeq: number | null;
  }[];
  const mine = approvals.filter(
    (x) => x.nodeId === 'redzone' && x.owner === action.rule.approvalOwner && x.scope === action.scope,
  );
  const last = mine[mine.length - 1];
  if (last === undefined) return { kind: 'none' };
  if (last.status === 'granted') return { kind: 'granted' };
  if (last.status !== 'denied') return { kind: 'pending' };
  // The denial's own event holds its reason and recovery path.
  const d = await callBridge(
    ctx.client!,
    'GET',
    `${path}?eventCursor=${last.decidedSeq ?? 0}&eventLimit=1`,
    undefined,
    ctx.config.deadlineMs,
  );
  const event = (d as { body: { run?: { events?: Record<string, unknown>[] } } }).body?.run?.events?.[0];
  const why = [event?.['failureReason'], event?.['recoveryPath']]
    .filter((v) => typeof v === 'string')
    .join('; recovery: ');
  return { kind: 'denied', reason: why || 'no reason recorded' };
}

export async function decideRedZone(ctx: HookContext, action: RedZoneAction): Promise<HookAnswer> {
  const { rule } = action;
  const what = describe(action);
  const grant = `harness approve ${ctx.runId} --owner ${shellQuote(rule.approvalOwner)} --scope ${shellQuote(action.scope)} --grant`;
  if (ctx.client === null)
    return blockTool(
      `Red Zone: ${what} needs ${rule.approvalOwner}'s approval, and the connector has no access token to ask the bridge; blocked.`,
    );
  let d = await lookup(ctx, action);
  if (d.kind === 'none') {
    const r = await ctx.send({
      type: 'approval.requested',
      nodeId: 'redzone',
      status: 'needs_approval',
      approvalOwner: rule.approvalOwner,
      approvalScope: action.scope,
      message: `Red Zone: ${ctx.table.label} asks for ${what}`.slice(0, 4000),
    });
    if (r.kind === 'queued') d = { kind: 'no-answer', why: r.why };
    else if (r.kind === 'refused' && r.answer.body['error'] !== 'event_state_violation')
      return blockTool(
        `Red Zone: ${what} needs approval, and the bridge refused the request (${refusal(r.answer.body)}); blocked.`,
      );
    else d = { kind: 'pending' };
  }
  const timeout = ctx.table.timeouts['pre-tool'] / (ctx.table.timeoutUnit === 'milliseconds' ? 1000 : 1);
  const until = Date.now() + Math.min(rule.waitSeconds, timeout - TIMEOUT_MARGIN_SECONDS) * 1000;
  while (d.kind === 'pending' && Date.now() + POLL_MS <= until) {
    await new Promise((r) => setTimeout(r, POLL_MS));
    const next = await lookup(ctx, action);
    if (next.kind !== 'no-answer') d = next;
  }
  switch (d.kind) {
    case 'granted':
      await ctx.send({
        type: 'gate.fired',
        nodeId: 'redzone',
        status: 'passed',
        message: `Red Zone: ${what} allowed by a human grant (${action.scope})`.slice(0, 4000),
      });
      return { exitCode: 0 };
    case 'denied':
      return blockTool(`Red Zone: a human denied ${what}: ${d.reason}. Do not retry it; take another way.`);
    case 'no-answer':
      return blockTool(
        `Red Zone: ${what} needs ${rule.approvalOwner}'s approval, and the bridge did not answer (${d.why}); blocked until it does.`,
      );
    default:
      return blockTool(
        `Red Zone: ${what} waits for ${rule.approvalOwner}'s approval. A human grants it in the approval shell with:\n  ${grant}\nUntil then it stays blocked; once granted, the same call goes through.`,
      );
  }
}
