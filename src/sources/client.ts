import type { RunEvent } from '../contract/index.js';

/** One answer of the bridge, as the CLI's client (src/cli/http.ts) returns it. */
export interface BridgeAnswer {
  status: number;
  body: Record<string, unknown>;
}

/**
 * What a source needs of the bridge: its HTTP API and nothing else (a source never reaches into
 * storage). The CLI passes its client with the access token already in `headers`.
 */
export type BridgeCall = (
  path: string,
  init: { method: string; body?: unknown; headers?: Record<string, string>; timeoutMs?: number },
) => Promise<BridgeAnswer>;

/**
 * The bridge gave no whole answer within HARNESS_CLIENT_TIMEOUT_MS (src/cli/http.ts throws it from
 * a BridgeCall): what was sent may have been stored.
 */
export class BridgeTimeout extends Error {
  override readonly name = 'BridgeTimeout';
}

/** A refusal a source reports: `exitCode` 2 for a usage or input problem, 1 for a bridge refusal. */
export class SourceError extends Error {
  override readonly name = 'SourceError';
  constructor(
    message: string,
    readonly exitCode: 1 | 2,
  ) {
    super(message);
  }
}

/** `code: message (problem; problem)`: a bridge refusal on one line. */
export function refusalLine(answer: BridgeAnswer): string {
  const problems = Array.isArray(answer.body['problems']) ? (answer.body['problems'] as unknown[]) : [];
  const head = `${String(answer.body['error'] ?? answer.status)}: ${String(answer.body['message'] ?? '')}`;
  return problems.length === 0 ? head : `${head} (${problems.map(String).join('; ')})`;
}

export type NewRunBody = {
  id: string;
  runMode: RunEvent['runMode'];
  eventSource: RunEvent['eventSource'];
} & Record<string, string>;

/**
 * Creates a run that did not exist: true when this call created it, false when a run with that ID
 * exists already (whatever its mode). POST /runs answers `created: true` to exactly one caller, so
 * a source never appends to a run someone else made, least of all a live one.
 */
export async function createFreshRun(call: BridgeCall, body: NewRunBody): Promise<boolean> {
  const r = await call('/runs', { method: 'POST', body });
  if (r.status === 201 && r.body['created'] === true) return true;
  if (r.status === 200 || (r.status === 409 && r.body['error'] === 'run_already_exists')) return false;
  // An adapter the bridge's policy refuses (outside its roots) is the caller's to fix: a usage error.
  const exitCode = r.body['error'] === 'adapter_policy_violation' ? 2 : 1;
  throw new SourceError(`the bridge refused to create run ${body.id}: ${refusalLine(r)}`, exitCode);
}

/** Posts one event; a refusal is thrown with `where` (a line or a node) naming what was refused. */
export async function postSourceEvent(
  call: BridgeCall,
  runId: string,
  event: Record<string, unknown>,
  where: string,
  headers: Record<string, string> = {},
): Promise<number> {
  const r = await call(`/runs/${encodeURIComponent(runId)}/events`, { method: 'POST', body: event, headers });
  if (r.status >= 300) throw new SourceError(`${where}: the bridge refused it: ${refusalLine(r)}`, 1);
  return Number(r.body['seq']);
}
