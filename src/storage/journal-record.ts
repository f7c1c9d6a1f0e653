import type { ArtifactClaim, RecordSeal, StoredEvent } from '../contract/index.js';
import { EVENT_MAX_BYTES } from '../contract/index.js';
import { canonicalBytes, GENESIS, mac, macEqual, macText } from './mac.js';

/**
 * `events.jsonl`: one JSON record per line, each MAC'd over (runId, seq, prev MAC, event, claim),
 * so a record cannot be edited, reordered, dropped from the middle or moved to another run.
 */
export interface JournalRecord {
  seq: number;
  prev: string;
  event: StoredEvent;
  claim: ArtifactClaim | null;
  seal?: RecordSeal | null;
  mac: string;
}

export class JournalAuthError extends Error {
  override readonly name = 'JournalAuthError';
}

/**
 * The event's canonical JSON, as it would be stored, exceeds EVENT_MAX_BYTES (CONTRACT 4: the
 * serialized event, not only the request body, is bounded). Thrown before anything is appended.
 */
export class EventTooLargeError extends RangeError {
  override readonly name = 'EventTooLargeError';
  readonly bytes: number;
  constructor(bytes: number) {
    super(`the serialized event is ${bytes} bytes; at most ${EVENT_MAX_BYTES}`);
    this.bytes = bytes;
  }
}

/**
 * The byte length of an event's canonical JSON when it exceeds EVENT_MAX_BYTES, else 0. UTF-8
 * takes at most 3 bytes per UTF-16 code unit, so an event shorter than a third of the limit (almost
 * every event) is never byte-counted: one multiplication and one comparison.
 */
export function eventBytesOverLimit(eventJson: string): number {
  if (eventJson.length * 3 <= EVENT_MAX_BYTES) return 0;
  const bytes = Buffer.byteLength(eventJson);
  return bytes > EVENT_MAX_BYTES ? bytes : 0;
}

export function recordMac(key: Buffer, runId: string, r: Omit<JournalRecord, 'mac'>): string {
  const body = { runId, seq: r.seq, prev: r.prev, event: r.event, claim: r.claim };
  // The seal is MAC'd only where present, so ordinary records keep their shape.
  return mac(key, 'harness.journal.v1', r.seal ? { ...body, seal: r.seal } : body);
}

/**
 * Seals a new record: its MAC (exactly `recordMac`) and its journal line. Each part is made
 * canonical once and the two texts are assembled around it, instead of canonicalizing the whole
 * record for the MAC and serializing it again for the line. The MAC input lists the members in
 * RFC 8785 order (claim, event, prev, runId, seal, seq); run IDs, MACs and sequence numbers never
 * need escaping, so JSON.stringify writes them canonically. The line is parsed, never compared,
 * when it is verified, so its member order is free.
 */
export function sealRecord(
  key: Buffer,
  runId: string,
  seq: number,
  prev: string,
  event: StoredEvent,
  claim: ArtifactClaim | null,
  seal: RecordSeal | null,
): { mac: string; line: string; eventJson: string } {
  const e = canonicalBytes(event);
  const c = canonicalBytes(claim);
  const s = seal ? canonicalBytes(seal) : null;
  const p = JSON.stringify(prev);
  const sealPart = s === null ? '' : `,"seal":${s}`;
  const signed = `{"claim":${c},"event":${e},"prev":${p},"runId":${JSON.stringify(runId)}${sealPart},"seq":${seq}}`;
  const recordMacHex = macText(key, 'harness.journal.v1', signed);
  return {
    mac: recordMacHex,
    eventJson: e,
    line: `{"seq":${seq},"prev":${p},"event":${e},"claim":${c}${sealPart},"mac":"${recordMacHex}"}\n`,
  };
}

/** The `prev` a page's first record claims (its MAC still has to verify); unparseable is tampering. */
export function claimedPrevOf(line: string, seq: number): string {
  try {
    return (JSON.parse(line) as { prev?: unknown }).prev as string;
  } catch {
    throw new JournalAuthError(`journal record ${seq} is not JSON`);
  }
}

/** Parses and authenticates one line; `expectedPrev` chains it to the record before. */
export function verifyLine(
  key: Buffer,
  runId: string,
  line: string,
  seq: number,
  expectedPrev: string,
): JournalRecord {
  let r: JournalRecord;
  try {
    r = JSON.parse(line) as JournalRecord;
  } catch {
    throw new JournalAuthError(`journal record ${seq} is not JSON`);
  }
  if (typeof r !== 'object' || r === null || r.seq !== seq || typeof r.mac !== 'string') {
    throw new JournalAuthError(`journal record ${seq} is malformed or out of order`);
  }
  if (r.prev !== expectedPrev || !macEqual(r.mac, recordMac(key, runId, r))) {
    throw new JournalAuthError(`journal record ${seq} fails authentication`);
  }
  return r;
}

/**
 * What record 0 of a journal chains from. A run's records chain from its config's MAC, so a
 * config replaced by another authentic one (an older seal of the same run, without the adapter or
 * root the run was started under) no longer matches its journal; records written before this
 * binding (pre-0.8.0 builds) chain from GENESIS and are accepted as they are. The claimed value
 * is only a choice between the two: the record's MAC binds it either way.
 */
export function firstPrev(line: string, genesis: string | undefined): string {
  const claimed = claimedPrevOf(line, 0);
  if (claimed === GENESIS) return GENESIS;
  if (genesis !== undefined && claimed !== genesis)
    throw new JournalAuthError('journal record 0 was not started under this run-config.json');
  return claimed;
}
