import type { BridgeClient } from './bridge-client.js';
import type { ConnectorConfig } from './config.js';
import type { SendResult } from './outbox.js';
import type { Payload } from './payload.js';
import type { RunMemory } from './state.js';
import type { RuntimeTable } from './table.js';

/** What one hook call works with, handed to each step. */
export interface HookContext {
  table: RuntimeTable;
  payload: Payload;
  config: ConnectorConfig;
  /** null without an access token: events then wait in the outbox until one is set. */
  client: BridgeClient | null;
  home: string;
  runId: string;
  cwd: string;
  memory: RunMemory;
  /** Lines for stderr: what went to the outbox, what the bridge refused. */
  notes: string[];
  /** True when something needs the user's attention: the hook then exits 1 (a warning). */
  warn: boolean;
  /** Sends one event of the run (actor, mode and source filled in), in order behind the outbox. */
  send(fields: Record<string, unknown>, deadlineMs?: number, id?: string): Promise<SendResult>;
}

export function refusal(body: Record<string, unknown>): string {
  const problems = Array.isArray(body['problems'])
    ? ` (${(body['problems'] as unknown[]).slice(0, 3).join('; ')})`
    : '';
  return `${String(body['error'] ?? 'refused')}: ${String(body['message'] ?? '')}${problems}`;
}

export function note(ctx: HookContext, line: string, warn: boolean): void {
  ctx.notes.push(line);
  if (warn) ctx.warn = true;
}
