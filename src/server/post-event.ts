import type {
  ArtifactClaim,
  JournalEntry,
  RecordSeal,
  RunConfig,
  RunEvent,
  StoredEvent,
} from '../contract/index.js';
import {
  APPROVAL_TEXT_MAX_BYTES,
  approvalSeal,
  approvalTextBytes,
  BridgeError,
  findPendingApproval,
  heldApprovalTextBytes,
  proposalArtifact,
  runModeOf,
  SELF_HEAL_PROPOSAL_PATH,
} from '../contract/index.js';
import { EventTooLargeError } from '../storage/journal-record.js';
import { macEqual, secretDigest } from '../storage/mac.js';
import type { OpenRun } from '../storage/types.js';
import { ArtifactError, claimArtifact } from '../validators/artifact-root.js';
import type { BridgeContext } from './context.js';
import { newConfig, planSetup, type SetupPlan } from './create-run.js';
import { completionSeal } from './run-completed.js';
import { resolveSetup } from './run-setup.js';
import { refuseOversized, stamped, tooLarge } from './stored-event.js';
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
  let loaded = await ctx.store.load(runId, 'write');
  if (loaded.kind === 'quarantined')
    throw new BridgeError('run_quarantined', 'the run is quarantined', loaded.quarantine.reasons);
  const creating = loaded.kind === 'missing';
  if (loaded.kind === 'missing') {
    // First event creates the run: its config is sealed and durable before the journal append.
    const setup = await resolveSetup(ctx, incoming);
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

/**
 * The event path inside the run's slot, its steps in order: idempotency, the run's state, the
 * rules of the event's type, the append. A step refuses the event by throwing; nothing is written
 * before the append, but for the config a first event adds (sealed just before its record) and a
 * refused completion's run.blocked. A step that may wait is awaited only for the events that need
 * it (a repeated id, a root or adapter named, an artifact to hash, a completion): the others pass
 * every check without yielding, and reach the append in the same turn.
 */
async function accept(
  ctx: BridgeContext,
  run: OpenRun,
  incoming: RunEvent,
  humanHeader: string | undefined,
): Promise<Accepted> {
  // Idempotency: a repeated id is answered with the stored event (or refused if it differs).
  const id = incoming.id;
  const seqs = id === undefined ? [] : run.ids.candidates(id);
  const stored = id === undefined || seqs.length === 0 ? null : await storedWithId(ctx, run, id, seqs);
  if (stored) return repeated(stored, incoming);

  // The run's state: open and with room, its sealed root/adapter kept, in its mode.
  refuseClosedRun(ctx, run);
  // A run created before the bridge had a repository adapter takes it with its first event.
  const setsUp =
    incoming.artifactRoot !== undefined ||
    incoming.adapterPath !== undefined ||
    (run.config.adapter === null && ctx.repositoryAdapter !== null && run.journal.count === 0);
  const plan = setsUp ? await planSetup(ctx, run, incoming) : NO_SETUP;
  refuseChangedSetup(plan);
  // The rules below judge a first event under the root/adapter it adds, which is sealed only once
  // the event is accepted, just before its record (or a refused completion's run.blocked) is
  // appended: a refused event seals nothing. Other events never reach the seal path.
  let unsealed = plan.seal;
  const config = unsealed ?? run.config;
  refuseOtherMode(run, config, incoming);

  // The rules of the event's type.
  let claim: ArtifactClaim | null = null;
  let seal: RecordSeal | null = null;
  switch (incoming.type) {
    case 'approval.requested':
      refuseApprovalRequest(run, incoming);
      break;
    case 'approval.granted':
    case 'approval.denied':
      refuseApprovalDecision(ctx, run, config, incoming, humanHeader);
      // The decision is bound to the bytes its node had claimed (approval-drift.ts), in its own
      // record: at most two paths of the config (its node's artifact, a self-heal proposal), so
      // with the 16 KiB event the record stays within JOURNAL_RECORD_MAX_BYTES.
      seal = approvalSeal(run.state, incoming.nodeId);
      break;
    case 'artifact.written':
      claim = await verify(ctx, config.artifactRoot, nodeArtifact(config, incoming));
      break;
    case 'self_heal.pr_proposed': {
      // A local proposal named by `artifact` or by selfHealPrUrl is verified and claimed alike.
      const proposal = proposalArtifact(incoming);
      if (proposal !== undefined) claim = await verify(ctx, config.artifactRoot, proposalPath(proposal));
      break;
    }
    case 'run.completed':
      // Refused unless the finish line holds; what this event adds is sealed before the gate.
      seal = await completionSeal(ctx, run, incoming, config, unsealed);
      unsealed = null;
      break;
    default:
      break;
  }

  // The append.
  const event = stamped(incoming);
  if (unsealed) {
    // The append's own size check comes after the seal: a first event too large to store is
    // refused before it seals anything (only first events pay for this extra serialization).
    refuseOversized(event);
    await ctx.store.sealConfig(run, unsealed);
  }
  return appended(ctx, run, event, claim, seal);
}

/** A repeated id: the stored event's answer if the repeat matches it, every differing field if not. */
function repeated(stored: JournalEntry, incoming: RunEvent): Accepted {
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

/** A completed run takes no more events; a full one is continued under a new run ID. */
function refuseClosedRun(ctx: BridgeContext, run: OpenRun): void {
  if (run.state.status === 'completed')
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
}

/** The root and adapter are write-once (planSetup): a request naming others is refused. */
function refuseChangedSetup(plan: SetupPlan): void {
  if (plan.differs.length > 0)
    throw state(
      'artifactRoot and adapterPath are immutable once set',
      plan.differs.map((f) => `${f} differs from the sealed value`),
    );
}

/** A run's mode is set by its first event (or its creation); events of the other mode are refused. */
function refuseOtherMode(run: OpenRun, config: RunConfig, incoming: RunEvent): void {
  const mode = runModeOf(run.state, config);
  if (mode !== null && incoming.runMode !== mode) {
    throw state(`the run is in ${mode} mode; events of mode ${incoming.runMode} are refused`);
  }
}

/**
 * A request identical to a pending one is refused, and so is one past the approval ceiling: the
 * run state keeps every approval's owner and scope (and indexes the pending ones) while the run is
 * open, so a run may hold at most APPROVAL_TEXT_MAX_BYTES of them. Like the event and journal
 * ceilings, a full run is continued under a new run ID; replay of a journal that already holds
 * more (written before the ceiling) is never refused.
 */
function refuseApprovalRequest(run: OpenRun, incoming: RunEvent): void {
  const s = run.state;
  if (findPendingApproval(s, incoming.nodeId, incoming.approvalOwner ?? '', incoming.approvalScope ?? '')) {
    throw state('an identical approval is already pending');
  }
  const held = heldApprovalTextBytes(s);
  const adds = approvalTextBytes(incoming.approvalOwner ?? '', incoming.approvalScope ?? '');
  if (held + adds <= APPROVAL_TEXT_MAX_BYTES) return;
  throw new BridgeError(
    'run_history_full',
    `the run's approvals are at their ceiling (${APPROVAL_TEXT_MAX_BYTES} bytes of approval owners, scopes and sealed artifact digests); continue under a new run ID`,
    [`its approvals count ${held} bytes and this request ${adds}`],
  );
}

/**
 * A grant or denial needs the human token, which is sealed to the run by keyed digest (a token
 * rotated since the run began cannot decide its approvals), and a pending request it answers.
 */
function refuseApprovalDecision(
  ctx: BridgeContext,
  run: OpenRun,
  config: RunConfig,
  incoming: RunEvent,
  humanHeader: string | undefined,
): void {
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
    !findPendingApproval(
      run.state,
      incoming.nodeId,
      incoming.approvalOwner ?? '',
      incoming.approvalScope ?? '',
    )
  ) {
    throw state('no pending approval matches this node, owner and scope');
  }
}

/** The one artifact a node writes (its config's artifactByNode): any other is refused. */
function nodeArtifact(config: RunConfig, incoming: RunEvent): string {
  const expected = config.artifactByNode[incoming.nodeId];
  if (incoming.artifact !== expected) {
    throw new BridgeError(
      'artifact_verification_failed',
      `node ${incoming.nodeId} writes exactly ${expected}`,
    );
  }
  return expected;
}

/** A local self-heal proposal has one path. */
function proposalPath(proposal: string): string {
  if (proposal !== SELF_HEAL_PROPOSAL_PATH) {
    throw new BridgeError(
      'artifact_verification_failed',
      `a self-heal proposal artifact is ${SELF_HEAL_PROPOSAL_PATH}`,
    );
  }
  return proposal;
}

/**
 * The record sealed and queued in journal order; the 201 answer is sent once `durable` resolves.
 * An event whose canonical JSON is over EVENT_MAX_BYTES is refused here, and nothing is stored.
 */
function appended(
  ctx: BridgeContext,
  run: OpenRun,
  event: StoredEvent,
  claim: ArtifactClaim | null,
  seal: RecordSeal | null,
): Accepted {
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
    return await claimArtifact(root, path, ctx.pool.hasher, ctx.env.artifactMaxBytes);
  } catch (err) {
    if (err instanceof ArtifactError) throw new BridgeError('artifact_verification_failed', err.message);
    throw err;
  }
}
