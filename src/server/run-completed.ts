import { randomUUID } from 'node:crypto';
import type { CompletionSeal, RunConfig, RunEvent, StoredEvent } from '../contract/index.js';
import { BridgeError, EVENT_MAX_BYTES, TEXT_FIELD_MAX } from '../contract/index.js';
import type { OpenRun } from '../storage/types.js';
import { completionGate } from './completion.js';
import type { BridgeContext } from './context.js';
import { ID_SHAPE, isoNow, refuseOversized } from './stored-event.js';

/**
 * The rules of a run.completed event (CONTRACT 5), inside the run's slot (post-event.ts). It is
 * sized first, so an oversized completion neither runs the gate nor leaves a run.blocked. Either
 * way a record is appended (run.completed or run.blocked) and the gate reads the run's config, so
 * the config this event adds (`unsealed`) is sealed before the gate. A refused completion appends
 * run.blocked, waits until it is durable, and throws finish_line_blocked; an accepted one returns
 * the seal its record carries.
 */
export async function completionSeal(
  ctx: BridgeContext,
  run: OpenRun,
  incoming: RunEvent,
  config: RunConfig,
  unsealed: RunConfig | null,
): Promise<CompletionSeal> {
  refuseOversized({ ...incoming, id: incoming.id ?? ID_SHAPE, ts: incoming.ts ?? isoNow() });
  if (unsealed) await ctx.store.sealConfig(run, unsealed);
  const gate = await completionGate(ctx, run);
  if (gate.problems.length > 0) {
    const blocked = systemBlocked(incoming, gate.problems);
    await ctx.store.append(run, blocked, null).durable;
    throw new BridgeError(
      'finish_line_blocked',
      'run.completed refused: the finish line does not hold',
      gate.problems,
    );
  }
  return {
    artifacts: Object.fromEntries([...gate.digests].sort(([a], [b]) => a.localeCompare(b))),
    adapterSha256: config.adapter?.sha256 ?? null,
    validatorDigest: await ctx.validatorDigest(),
    ...gate.documents,
  };
}

/**
 * Bytes of the run.blocked message as stored (its JSON string): a quarter of the stored-event
 * ceiling, so the bridge's own record always fits it, whatever characters the problems quote.
 */
const BLOCKED_MESSAGE_MAX_BYTES = EVENT_MAX_BYTES / 4;

/**
 * `raw`, made well-formed, cut to at most `maxChars` UTF-16 units and `maxBytes` bytes of JSON text, with "..." when
 * cut. Problems may quote paths from agent-written documents: a control character is one unit but
 * six bytes once escaped, so a cut by length alone can still be too large to store.
 */
export function cutForJournal(raw: string, maxChars: number, maxBytes: number): string {
  // The bridge's own texts quote agent-written documents, whose JSON may escape a lone surrogate:
  // canonical JSON cannot sign one, so it becomes U+FFFD here (an event body's are refused).
  const text = raw.toWellFormed();
  const fits = (s: string) => s.length <= maxChars && Buffer.byteLength(JSON.stringify(s)) <= maxBytes;
  if (fits(text)) return text;
  let lo = 0;
  let hi = Math.min(text.length, maxChars);
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(`${text.slice(0, mid)}...`)) lo = mid;
    else hi = mid - 1;
  }
  // Never end on the first half of a surrogate pair.
  const cut = /[\uD800-\uDBFF]$/.test(text.slice(0, lo)) ? lo - 1 : lo;
  return `${text.slice(0, cut)}...`;
}

/** The run.blocked record a refused completion leaves in the journal (CONTRACT 5). */
function systemBlocked(completion: RunEvent, problems: string[]): StoredEvent {
  const message = cutForJournal(
    `run.completed refused: ${problems.join('; ')}`,
    TEXT_FIELD_MAX,
    BLOCKED_MESSAGE_MAX_BYTES,
  );
  return {
    id: randomUUID(),
    ts: new Date().toISOString(),
    type: 'run.blocked',
    actor: 'system',
    runMode: completion.runMode,
    eventSource: completion.runMode === 'live' ? 'bridge' : completion.eventSource,
    nodeId: completion.nodeId,
    message,
    status: 'blocked',
  };
}
