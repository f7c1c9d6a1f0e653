import type { NodeId, NodeState, RunMode } from './enums.js';
import { NODE_IDS } from './enums.js';
import { nodeStateSetBy, type StoredEvent } from './event.js';
import { APPROVAL_RECORD_BYTES } from './limits.js';
import { SELF_HEAL_PROPOSAL_PATH } from './nodes.js';

/** The SHA-256 claim `artifact.written` records in the journal (CONTRACT section 6). */
export interface ArtifactClaim {
  path: string;
  sha256: string;
  size: number;
  mtimeMs: number;
}

/**
 * What an accepted `run.completed` seals into its journal record, so later reads can tell drift:
 * the digests the gate verified and the runtime that judged them.
 */
export interface CompletionSeal {
  artifacts: Record<string, string>;
  adapterSha256: string | null;
  validatorDigest: string;
  /**
   * The unclaimed documents the gate read (digest, or null when absent) and one digest over the
   * paths they name; absent from seals written before 0.8.0's document seal.
   */
  documents?: Record<string, string | null>;
  named?: string;
}

/**
 * What an accepted `approval.granted` or `approval.denied` seals into its journal record (issue
 * 28): the SHA-256 of every artifact its node had claimed when the human decided, by path (each
 * path whose latest claim was made on that node). The decision covers those bytes only
 * (approval-drift.ts). Absent from decisions written before 0.8.0's approval seal.
 */
export interface ApprovalSeal {
  approved: Record<string, string>;
}

/** The seal a journal record may carry beside its event and claim: a completion's or a decision's. */
export type RecordSeal = CompletionSeal | ApprovalSeal;

/** One journal entry as the domain sees it (the MAC chain is storage's business). */
export interface JournalEntry {
  seq: number;
  event: StoredEvent;
  claim: ArtifactClaim | null;
  seal?: RecordSeal | null;
}

/** The seal of a decision's record, or undefined (another record, or a decision older than the seal). */
export function approvalSealOf(entry: JournalEntry): ApprovalSeal | undefined {
  const seal = entry.seal;
  return seal && 'approved' in seal ? seal : undefined;
}

export interface NodeRecord {
  state: NodeState;
  seq: number | null;
  skipReason: string | null;
  failureReason: string | null;
  recoveryPath: string | null;
}

/**
 * What the last `artifact.written` of a path reported with its `status` (SPEC completion rule 2:
 * present, verified, not failed, not skipped without a reason). `failed` blocks completion until a
 * later, non-failed write of the same path; `skipped` carries its mandatory reason.
 */
export type ArtifactOutcome = 'verified' | 'failed' | 'skipped';

export interface ArtifactRecord extends ArtifactClaim {
  nodeId: NodeId;
  seq: number;
  ts: string;
  outcome: ArtifactOutcome;
  failureReason: string | null;
  recoveryPath: string | null;
  skipReason: string | null;
}

export interface ApprovalRecord {
  nodeId: NodeId;
  owner: string;
  scope: string;
  status: 'pending' | 'granted' | 'denied';
  requestedSeq: number;
  requestedAt: string;
  decidedSeq: number | null;
  decidedAt: string | null;
  /**
   * A decision's approval seal: the digests of its node's claimed artifacts when it was decided.
   * Absent while pending, and on decisions recorded before the seal (they bind no bytes).
   */
  approved?: Record<string, string>;
}

export interface SelfHealRecord {
  detectedSeq: number | null;
  resolvedSeq: number | null;
  resolution: {
    type: 'self_heal.pr_opened' | 'self_heal.pr_proposed';
    prUrl: string | null;
    artifact: string | null;
  } | null;
}

/** State derived from the journal by `applyEntry`; the snapshot stores it. */
export interface RunState {
  runId: string;
  runMode: RunMode | null;
  status: 'running' | 'blocked' | 'completed';
  eventCount: number;
  createdAt: string;
  updatedAt: string;
  currentNodeId: NodeId | null;
  nodes: Record<NodeId, NodeRecord>;
  approvals: ApprovalRecord[];
  artifacts: Record<string, ArtifactRecord>;
  selfHeal: SelfHealRecord;
  lastBlocked: { seq: number; problems: string[] } | null;
  completedSeq: number | null;
  completionSeal: CompletionSeal | null;
}

export function emptyState(runId: string, createdAt: string): RunState {
  const nodes = {} as Record<NodeId, NodeRecord>;
  for (const id of NODE_IDS) {
    nodes[id] = { state: 'pending', seq: null, skipReason: null, failureReason: null, recoveryPath: null };
  }
  return {
    runId,
    runMode: null,
    status: 'running',
    eventCount: 0,
    createdAt,
    updatedAt: createdAt,
    currentNodeId: null,
    nodes,
    approvals: [],
    artifacts: {},
    selfHeal: { detectedSeq: null, resolvedSeq: null, resolution: null },
    lastBlocked: null,
    completedSeq: null,
    completionSeal: null,
  };
}

/**
 * The pending approvals of a state by key, in request order, beside the state (never persisted):
 * built once from `approvals` when first needed, then kept in step by `applyEntry`, the one place
 * that changes an approval. An event's lookup and the summary's count then cost the same however
 * many approvals the run has seen (CONTRACT 7: appending costs the same at event 100000 as at 10).
 * The index is nested by node, owner and scope, keyed by the records' own strings: a key built by
 * joining them would hold a second copy of up to 8 KiB of agent text per pending approval.
 */
interface ApprovalIndex {
  pending: Map<NodeId, Map<string, Map<string, ApprovalRecord[]>>>;
  count: number;
  /** approvalTextBytes of every approval the state keeps, pending or decided, and approvedBytes of its seal. */
  textBytes: number;
}

const approvalIndexes = new WeakMap<RunState, ApprovalIndex>();

/**
 * What one approval counts against APPROVAL_TEXT_MAX_BYTES: its owner and scope in UTF-8, and
 * APPROVAL_RECORD_BYTES for the record that holds them, so many small approvals are bounded too.
 */
export function approvalTextBytes(owner: string, scope: string): number {
  return Buffer.byteLength(owner, 'utf8') + Buffer.byteLength(scope, 'utf8') + APPROVAL_RECORD_BYTES;
}

/**
 * What a decision's approval seal adds to APPROVAL_TEXT_MAX_BYTES once the state keeps it: each
 * path in UTF-8 and its 64-digit digest. At most two paths (its node's artifact and a self-heal
 * proposal, the only paths claimed on a node), so a decision is never refused for it; the next
 * request is measured with it.
 */
export function approvedBytes(approved: Record<string, string> | undefined): number {
  let bytes = 0;
  for (const path in approved) bytes += Buffer.byteLength(path, 'utf8') + 64;
  return bytes;
}

function approvalIndex(state: RunState): ApprovalIndex {
  let index = approvalIndexes.get(state);
  if (!index) {
    index = { pending: new Map(), count: 0, textBytes: 0 };
    for (const a of state.approvals) {
      index.textBytes += approvalTextBytes(a.owner, a.scope) + approvedBytes(a.approved);
      if (a.status === 'pending') addPending(index, a);
    }
    approvalIndexes.set(state, index);
  }
  return index;
}

function addPending(index: ApprovalIndex, a: ApprovalRecord): void {
  let byOwner = index.pending.get(a.nodeId);
  if (!byOwner) {
    byOwner = new Map();
    index.pending.set(a.nodeId, byOwner);
  }
  let byScope = byOwner.get(a.owner);
  if (!byScope) {
    byScope = new Map();
    byOwner.set(a.owner, byScope);
  }
  const queue = byScope.get(a.scope);
  if (queue) queue.push(a);
  else byScope.set(a.scope, [a]);
  index.count++;
}

/** Takes the oldest pending approval with this key out of the index, dropping emptied maps. */
function takePending(index: ApprovalIndex, nodeId: NodeId, owner: string, scope: string) {
  const byOwner = index.pending.get(nodeId);
  const byScope = byOwner?.get(owner);
  const queue = byScope?.get(scope);
  const pending = queue?.shift();
  if (!pending) return undefined;
  index.count--;
  if (queue?.length === 0) byScope?.delete(scope);
  if (byScope?.size === 0) byOwner?.delete(owner);
  if (byOwner?.size === 0) index.pending.delete(nodeId);
  return pending;
}

/** The oldest pending approval with this key, as a scan of `approvals` in request order finds it. */
export function findPendingApproval(
  state: RunState,
  nodeId: NodeId,
  owner: string,
  scope: string,
): ApprovalRecord | undefined {
  return approvalIndex(state).pending.get(nodeId)?.get(owner)?.get(scope)?.[0];
}

/** How many approvals of the run are pending. */
export function pendingApprovalCount(state: RunState): number {
  return approvalIndex(state).count;
}

/**
 * The approval text the state holds (approvalTextBytes summed over every approval, pending or
 * decided, with approvedBytes of each decision's seal): what a new request is measured against
 * APPROVAL_TEXT_MAX_BYTES with.
 */
export function heldApprovalTextBytes(state: RunState): number {
  return approvalIndex(state).textBytes;
}

/** A verified claim as the run records it: a later write of the same path replaces it whole. */
function artifactRecord(claim: ArtifactClaim, event: StoredEvent, seq: number): ArtifactRecord {
  const failed = event.status === 'failed';
  const skipped = event.status === 'skipped';
  return {
    ...claim,
    nodeId: event.nodeId,
    seq,
    ts: event.ts,
    outcome: failed ? 'failed' : skipped ? 'skipped' : 'verified',
    failureReason: failed ? (event.failureReason ?? null) : null,
    recoveryPath: failed ? (event.recoveryPath ?? null) : null,
    skipReason: skipped ? (event.skipReason ?? null) : null,
  };
}

/**
 * Folds one accepted journal entry into the state, in place (append must stay O(1)). Acceptance
 * rules live in the server; this only records what an accepted event means (CONTRACT section 5).
 */
export function applyEntry(state: RunState, entry: JournalEntry): void {
  const { event, seq } = entry;
  state.eventCount = seq + 1;
  state.updatedAt = event.ts;
  if (state.runMode === null) state.runMode = event.runMode;
  if (event.type === 'run.mode_set') state.runMode = event.runMode;

  const node = state.nodes[event.nodeId];
  const nextState = nodeStateSetBy(event);
  if (nextState !== undefined) {
    node.state = nextState;
    node.seq = seq;
    if (nextState === 'skipped') node.skipReason = event.skipReason ?? null;
    if (nextState === 'failed') {
      node.failureReason = event.failureReason ?? null;
      node.recoveryPath = event.recoveryPath ?? null;
    }
  }
  if (event.type !== 'run.blocked' && event.type !== 'run.completed') state.currentNodeId = event.nodeId;

  switch (event.type) {
    case 'approval.requested': {
      const index = approvalIndex(state);
      const request: ApprovalRecord = {
        nodeId: event.nodeId,
        owner: event.approvalOwner ?? '',
        scope: event.approvalScope ?? '',
        status: 'pending',
        requestedSeq: seq,
        requestedAt: event.ts,
        decidedSeq: null,
        decidedAt: null,
      };
      state.approvals.push(request);
      index.textBytes += approvalTextBytes(request.owner, request.scope);
      addPending(index, request);
      break;
    }
    case 'approval.granted':
    case 'approval.denied': {
      const index = approvalIndex(state);
      const pending = takePending(index, event.nodeId, event.approvalOwner ?? '', event.approvalScope ?? '');
      if (pending) {
        pending.status = event.type === 'approval.granted' ? 'granted' : 'denied';
        pending.decidedSeq = seq;
        pending.decidedAt = event.ts;
        const seal = approvalSealOf(entry);
        if (seal) {
          pending.approved = seal.approved;
          index.textBytes += approvedBytes(seal.approved);
        }
      }
      break;
    }
    case 'artifact.written':
      if (entry.claim) state.artifacts[entry.claim.path] = artifactRecord(entry.claim, event, seq);
      break;
    case 'self_heal.detected':
      state.selfHeal = { detectedSeq: seq, resolvedSeq: null, resolution: null };
      break;
    case 'self_heal.pr_opened':
    case 'self_heal.pr_proposed':
      if (entry.claim) state.artifacts[entry.claim.path] = artifactRecord(entry.claim, event, seq);
      state.selfHeal.resolvedSeq = seq;
      state.selfHeal.resolution = {
        type: event.type,
        // The local reference is no URL: the proposal it names is the claimed artifact.
        prUrl: event.selfHealPrUrl === SELF_HEAL_PROPOSAL_PATH ? null : (event.selfHealPrUrl ?? null),
        artifact: entry.claim?.path ?? null,
      };
      break;
    case 'run.blocked':
      state.status = 'blocked';
      state.lastBlocked = { seq, problems: [event.message] };
      break;
    case 'run.completed':
      state.status = 'completed';
      state.completedSeq = seq;
      state.completionSeal = entry.seal && !('approved' in entry.seal) ? entry.seal : null;
      break;
    default:
      if (state.status === 'blocked') state.status = 'running';
      break;
  }
}

export function pendingApprovals(state: RunState): ApprovalRecord[] {
  return state.approvals.filter((a) => a.status === 'pending');
}
