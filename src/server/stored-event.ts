import { randomUUID } from 'node:crypto';
import type { RunEvent, StoredEvent } from '../contract/index.js';
import { BridgeError, EVENT_MAX_BYTES } from '../contract/index.js';
import { eventBytesOverLimit } from '../storage/journal-record.js';
import { canonicalBytes } from '../storage/mac.js';

/**
 * An accepted event as the journal stores it: its `id` and `ts` filled in, and at most
 * EVENT_MAX_BYTES of canonical JSON (CONTRACT 4). Used on the event path (post-event.ts) and by a
 * completion, which is sized before its gate runs (run-completed.ts).
 */

/** A generated id has this length (randomUUID), so an event can be sized before it gets one. */
export const ID_SHAPE = '00000000-0000-0000-0000-000000000000';

/** CONTRACT 4: the serialized event (with its id and ts filled in) is at most EVENT_MAX_BYTES. */
export const tooLarge = (bytes: number) =>
  new BridgeError(
    'payload_too_large',
    `the stored event would be ${bytes} bytes; at most ${EVENT_MAX_BYTES}`,
  );

/**
 * Refuses an event whose canonical JSON would exceed EVENT_MAX_BYTES. A serialization of its own,
 * paid only where the event must be sized before the append sizes it (a first event before its
 * config is sealed, a completion before its gate).
 */
export function refuseOversized(event: StoredEvent): void {
  const over = eventBytesOverLimit(canonicalBytes(event));
  if (over > 0) throw tooLarge(over);
}

let stampMs = Number.NaN;
let stamp = '';
/** `new Date().toISOString()`, formatted once per millisecond: many events share one. */
export function isoNow(): string {
  const ms = Date.now();
  if (ms !== stampMs) {
    stampMs = ms;
    stamp = new Date(ms).toISOString();
  }
  return stamp;
}

/**
 * The parsed request body becomes the stored event: nothing reads it after this, and copying an
 * object of varying shape costs more than the two fields it gains.
 */
export function stamped(incoming: RunEvent): StoredEvent {
  const event = incoming as StoredEvent;
  event.id ??= randomUUID();
  event.ts ??= isoNow();
  return event;
}
