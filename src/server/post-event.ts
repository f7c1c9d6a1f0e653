import { randomUUID } from 'node:crypto';
import type {
  ArtifactClaim,
  CompletionSeal,
  JournalEntry,
  RunEvent,
  StoredEvent,
} from '../contract/index.js';
import {
  APPROVAL_TEXT_MAX_BYTES,
  approvalTextBytes,
  BridgeError,
  EVENT_MAX_BYTES,
  findPendingApproval,
  heldApprovalTextBytes,
  proposalArtifact,
  runModeOf,
  SELF_HEAL_PROPOSAL_PATH,
  TEXT_FIELD_MAX,
} from '../contract/index.js';
import { EventTooLargeError, eventBytesOverLimit } from '../storage/journal-record.js';
import { canonicalBytes, macEqual, secretDigest } from '../storage/mac.js';
import type { OpenRun } from '../storage/run-files.js';
import { ArtifactError, claimArtifact } from '../validators/artifact-root.js';
import { completionGate } from './completion.js';
import type { BridgeContext } from './context.js';
import { newConfig, planSetup, type SetupPlan } from './create-run.js';
import { resolveSetup } from './run-setup.js';
import { eventView, eventViewJson, summaryView } from './views.js';

/**
 * The answer: 201 `{ok, event, seq, run}` as JSON text (the event part is its stored canonical
 * JSON), or 200 for a repeated id.
 */
export type PostResult =
  | { status: 201; body: string }
  | { status: 200; body: { ok: true; duplicate: true; event: ReturnType<typeof eventView>; seq: number } };

const state = (message: string, problems: string[] = []) =>
  new BridgeError('event_state_violation', message, problems);

/** Fields compared when an event id repeats; `ts` only when the repeat supplies one. */
function differingFields(stored: StoredEvent, incoming: RunEvent): string[] {
  const names = new Set([...Object.keys(stored), ...Object.keys(incoming)]);
  names.delete('ts');
  if (incoming.ts !== undefined) names.add('ts');
  return [...names].filter(
    (n) => (stored as Record<string, unknown>)[n] !== (incoming as Record<string, unknown>)[n],
  );
}

/** A decided event: the answer to send, once `durable` (its record's fdatasync) has resolved. */
export interface Accepted {
  result: PostResult;
  durable: Promise<void>;
}

const DONE = Promise.resolve();
const NO_SETUP: SetupPlan = { differs: [], seal: null };
/** A generated id has this length (randomUUID), so an event can be sized before it gets one. */
const ID_SHAPE = '00000000-0000-0000-0000-000000000000';

/** CONTRACT 4: the serialized event (with its id and ts filled in) is at most EVENT_MAX_BYTES. */
const tooLarge = (bytes: number) =>
  new BridgeError(
    'payload_too_large',
    `the stored event would be ${bytes} bytes; at most ${EVENT_MAX_BYTES}`,
  );

let stampMs = Number.NaN;
let stamp = '';
/** `new Date().toISOString()`, formatted once per millisecond: many events share one. */
function isoNow(): string {
  const ms = Date.now();
  if (ms !== stampMs) {
    stampMs = ms;
    stamp = new Date(ms).toISOString();
  }
  return stamp;
}

/**
 * Runs inside the run's queue slot: every rule that depends on the run's state (CONTRACT 4-6).
 * It returns once the record is sealed and queued in journal order, so the next event of the run
 * can be decided while this one's fdatasync is in flight and share the next one (group commit);
 * the caller answers only after `durable` resolves. `incoming` (the parsed body, owned by this
 * request) is taken over: an appended event is that object with its `id` and `ts` filled in.
 */
export async function postEvent(
  ctx: BridgeContext,
  runId: string,
  incoming: RunEvent,
  humanHeader: string | undefined,
): Promise<Accepted> {
  let loaded = await ctx.store.load(runId);
  if (loaded.kind === 'quarantined')
    throw new BridgeError('run_quarantined', 'the run is quarantined', loaded.quarantine.reasons);
  const creating = loaded.kind === 'missing';
  if (loaded.kind === 'missing') {
    // First event creates the run: its config is sealed and durable before the journal append.
    const setup = await resolveSetup(ctx.env, incoming);
    const config = newConfig(ctx, runId, setup, {
      metadata: {},
      runMode: incoming.runMode,
      eventSource: incoming.eventSource,
    });
    loaded = { kind: 'open', run: await ctx.store.create(config) };
  }
  const run = loaded.run;
  let accepted: Accepted;
  try {
    accepted = await accept(ctx, run, incoming, humanHeader);
  } catch (err) {
    ctx.store.release(run);
    // A refused first event leaves no run behind, least of all a config sealed from its fields
    // (an artifactRoot from a refused event would otherwise lock out the corrected retry).
    if (creating) await ctx.store.discardUnused(run);
    throw err;
  }
  // The pin outlives the slot until the record is on disk: a pinned run is never evicted, so the
  // run is never reopened (its journal rescanned) while one of its writes is in flight.
  const release = () => ctx.store.release(run);
  accepted.durable.then(release, release);
  return accepted;
}

async function accept(
  ctx: BridgeContext,
  run: OpenRun,
  incoming: RunEvent,
  humanHeader: string | undefined,
): Promise<Accepted> {
  const id = incoming.id;
  const seqs = id === undefined ? [] : run.ids.candidates(id);
  const stored = id === undefined || seqs.length === 0 ? null : await storedWithId(ctx, run, id, seqs);
  if (stored) {
    const differs = differingFields(stored.event, incoming);
    if (differs.length > 0) {
      throw new BridgeError(
        'event_id_conflict',
        'an event with this id was stored with other content',
        differs.map((f) => `${f} differs`),
      );
    }
    return {
      result: { status: 200, body: { ok: true, duplicate: true, event: eventView(stored), seq: stored.seq } },
      durable: DONE,
    };
  }
  const s = run.state;
  if (s.status === 'completed')
    throw new BridgeError('run_closed', 'the run is completed and accepts no more events');
  if (run.journal.count >= ctx.env.maxEventsPerRun) {
    throw new BridgeError(
      'run_history_full',
      'the run holds the maximum number of events; continue under a new run ID',
    );
  }
  if (run.journal.full) {
    throw new BridgeError(
      'run_history_full',
      'the run journal is at its byte ceiling; continue under a new run ID',
    );
  }
  const setsUp = incoming.artifactRoot !== undefined || incoming.adapterPath !== undefined;
  const plan = setsUp ? await planSetup(ctx, run, incoming) : NO_SETUP;
  if (plan.differs.length > 0)
    throw state(
      'artifactRoot and adapterPath are immutable once set',
      plan.differs.map((f) => `${f} differs from the sealed value`),
    );
  // The rules below judge a first event under the root/adapter it adds, which is sealed only once
  // the event is accepted, just before its record (or a refused completion's run.blocked) is
  // appended: a refused event seals nothing. Events that name neither never reach the seal path.
  let unsealed = plan.seal;
  const config = unsealed ?? run.config;

  const mode = runModeOf(s, config);
  if (mode !== null && incoming.runMode !== mode) {
    throw state(`the run is in ${mode} mode; events of mode ${incoming.runMode} are refused`);
  }

  let claim: ArtifactClaim | null = null;
  let seal: CompletionSeal | null = null;
  switch (incoming.type) {
    case 'approval.requested':
      if (
        findPendingApproval(s, incoming.nodeId, incoming.approvalOwner ?? '', incoming.approvalScope ?? '')
      ) {
        throw state('an identical approval is already pending');
      }
      approvalCeiling(s, incoming);
      break;
    case 'approval.granted':
    case 'approval.denied':
      // The human token is sealed to the run by keyed digest: a token rotated since the run began
      // cannot decide its approvals.
      if (
        humanHeader === undefined ||
        !macEqual(secretDigest(ctx.env.integrityKey, humanHeader), config.humanTokenDigest)
      ) {
        throw new BridgeError(
          'human_approval_required',
          'the human approval token does not match the one sealed to this run',
        );
      }
      if (
        !findPendingApproval(s, incoming.nodeId, incoming.approvalOwner ?? '', incoming.approvalScope ?? '')
      ) {
        throw state('no pending approval matches this node, owner and scope');
      }
      break;
    case 'artifact.written': {
      const expected = config.artifactByNode[incoming.nodeId];
      if (incoming.artifact !== expected) {
        throw new BridgeError(
          'artifact_verification_failed',
          `node ${incoming.nodeId} writes exactly ${expected}`,
        );
      }
      claim = await verify(ctx, config.artifactRoot, expected);
      break;
    }
    case 'self_heal.pr_proposed': {
      // A local proposal named by `artifact` or by selfHealPrUrl is verified and claimed alike.
      const proposal = proposalArtifact(incoming);
      if (proposal !== undefined) {
        if (proposal !== SELF_HEAL_PROPOSAL_PATH) {
          throw new BridgeError(
            'artifact_verification_failed',
            `a self-heal proposal artifact is ${SELF_HEAL_PROPOSAL_PATH}`,
          );
        }
        claim = await verify(ctx, config.artifactRoot, SELF_HEAL_PROPOSAL_PATH);
      }
      break;
    }
    case 'run.completed': {
      // Sized before the gate, so an oversized completion neither runs it nor leaves a run.blocked.
      const over = eventBytesOverLimit(
        canonicalBytes({ ...incoming, id: incoming.id ?? ID_SHAPE, ts: incoming.ts ?? isoNow() }),
      );
      if (over > 0) throw tooLarge(over);
      // Either way a record is appended (run.completed or run.blocked), and the gate reads the
      // run's config: what this event adds is sealed first.
      if (unsealed) {
        await ctx.store.sealConfig(run, unsealed);
        unsealed = null;
      }
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
      seal = {
        artifacts: Object.fromEntries([...gate.digests].sort(([a], [b]) => a.localeCompare(b))),
        adapterSha256: config.adapter?.sha256 ?? null,
        validatorDigest: await ctx.validatorDigest(),
        ...gate.documents,
      };
      break;
    }
    default:
      break;
  }
  // The parsed request body becomes the stored event: nothing reads it after this, and copying
  // an object of varying shape costs more than the two fields it gains.
  const event = incoming as StoredEvent;
  event.id ??= randomUUID();
  event.ts ??= isoNow();
  if (unsealed) {
    // The append's own size check comes after the seal: a first event too large to store is
    // refused before it seals anything (only first events pay for this extra serialization).
    const over = eventBytesOverLimit(canonicalBytes(event));
    if (over > 0) throw tooLarge(over);
    await ctx.store.sealConfig(run, unsealed);
  }
  let appended: ReturnType<typeof ctx.store.append>;
  try {
    appended = ctx.store.append(run, event, claim, seal);
  } catch (err) {
    if (err instanceof EventTooLargeError) throw tooLarge(err.bytes);
    throw err;
  }
  const { entry, durable, eventJson } = appended;
  const body = `{"ok":true,"event":${eventViewJson(entry, eventJson)},"seq":${entry.seq},"run":${JSON.stringify(summaryView(run))}}`;
  return { result: { status: 201, body }, durable };
}

/**
 * The approval ceiling: the run state keeps every approval's owner and scope (and indexes the
 * pending ones) while the run is open, so a run may hold at most APPROVAL_TEXT_MAX_BYTES of them.
 * Like the event and journal ceilings, a full run is continued under a new run ID; replay of a
 * journal that already holds more (written before the ceiling) is never refused.
 */
function approvalCeiling(s: OpenRun['state'], incoming: RunEvent): void {
  const held = heldApprovalTextBytes(s);
  const adds = approvalTextBytes(incoming.approvalOwner ?? '', incoming.approvalScope ?? '');
  if (held + adds <= APPROVAL_TEXT_MAX_BYTES) return;
  throw new BridgeError(
    'run_history_full',
    `the run's approvals are at their ceiling (${APPROVAL_TEXT_MAX_BYTES} bytes of approval owners and scopes); continue under a new run ID`,
    [`its approvals count ${held} bytes and this request ${adds}`],
  );
}

/** The stored event with this id, if any: the index's candidates are confirmed in the journal. */
async function storedWithId(
  ctx: BridgeContext,
  run: OpenRun,
  id: string,
  seqs: readonly number[],
): Promise<JournalEntry | null> {
  for (const seq of seqs) {
    const [entry] = await ctx.store.read(run, seq, seq + 1);
    if (!entry) throw new Error('journal index out of step');
    if (entry.event.id === id) return entry;
  }
  return null;
}

async function verify(ctx: BridgeContext, root: string | null, path: string): Promise<ArtifactClaim> {
  if (root === null) {
    throw state('the run has no artifactRoot: set it on the first event or with POST /runs');
  }
  try {
    return await claimArtifact(root, path, ctx.pool.hasher);
  } catch (err) {
    if (err instanceof ArtifactError) throw new BridgeError('artifact_verification_failed', err.message);
    throw err;
  }
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
