import fc from 'fast-check';
import t from 'tap';
import {
  type ApprovalRecord,
  applyEntry,
  approvalTextBytes,
  emptyState,
  findPendingApproval,
  heldApprovalTextBytes,
  type NodeId,
  pendingApprovalCount,
  type RunState,
  type StoredEvent,
} from '../../src/contract/index.js';

/**
 * The pending-approval index beside a run state answers exactly what a scan of `approvals` in
 * request order answers, whenever it is first built (at open, from a snapshot, mid-run) and
 * whatever the journal holds, duplicates of a pending key included (the API refuses them, a
 * replayed journal is taken as it is), and counts the approval text the state holds.
 */
const NODES: NodeId[] = ['redzone', 'prove'];
const OWNERS = ['lead', 'ops'];
const SCOPES = ['deploy', ''];

const scanFind = (s: RunState, nodeId: NodeId, owner: string, scope: string): ApprovalRecord | undefined =>
  s.approvals.find(
    (a) => a.status === 'pending' && a.nodeId === nodeId && a.owner === owner && a.scope === scope,
  );
const scanCount = (s: RunState) => s.approvals.filter((a) => a.status === 'pending').length;
const scanText = (s: RunState) => s.approvals.reduce((n, a) => n + approvalTextBytes(a.owner, a.scope), 0);

type Step = {
  type: 'approval.requested' | 'approval.granted' | 'approval.denied';
  nodeId: NodeId;
  owner: string;
  scope: string;
  /** Ask the index now (so it is built at this point, not earlier). */
  query: boolean;
  /** Carry on from a JSON copy of the state, as a snapshot reopened. */
  reopen: boolean;
};

const step = fc.record({
  type: fc.constantFrom('approval.requested', 'approval.granted', 'approval.denied'),
  nodeId: fc.constantFrom(...NODES),
  owner: fc.constantFrom(...OWNERS),
  scope: fc.constantFrom(...SCOPES),
  query: fc.boolean(),
  reopen: fc.boolean(),
}) as fc.Arbitrary<Step>;

function entry(seq: number, s: Step) {
  const event = {
    id: `e${seq}`,
    ts: new Date(Date.UTC(2026, 0, 1, 0, 0, seq)).toISOString(),
    type: s.type,
    actor: s.type === 'approval.requested' ? 'runtime-a' : 'human',
    runMode: 'live',
    eventSource: 'api',
    nodeId: s.nodeId,
    message: 'm',
    status: s.type === 'approval.requested' ? 'needs_approval' : 'ok',
    approvalOwner: s.owner,
    approvalScope: s.scope,
  } as StoredEvent;
  return { seq, event, claim: null };
}

t.test('the index answers as a scan of approvals, however it was built', async () => {
  await fc.assert(
    fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
      let indexed = emptyState('r', '2026-01-01T00:00:00.000Z');
      const scanned = emptyState('r', '2026-01-01T00:00:00.000Z');
      for (const [seq, s] of steps.entries()) {
        if (s.reopen) indexed = JSON.parse(JSON.stringify(indexed)) as RunState;
        if (s.query) pendingApprovalCount(indexed);
        applyEntry(indexed, entry(seq, s));
        applyEntry(scanned, entry(seq, s));
        // The scan-built reference: a fresh copy has no index until asked.
        const reference = JSON.parse(JSON.stringify(scanned)) as RunState;
        if (JSON.stringify(indexed.approvals) !== JSON.stringify(reference.approvals)) return false;
        if (pendingApprovalCount(indexed) !== scanCount(reference)) return false;
        // The approval ceiling's count covers every approval kept, pending or decided.
        if (heldApprovalTextBytes(indexed) !== scanText(reference)) return false;
        for (const nodeId of NODES)
          for (const owner of OWNERS)
            for (const scope of SCOPES) {
              const got = findPendingApproval(indexed, nodeId, owner, scope);
              const want = scanFind(reference, nodeId, owner, scope);
              if (got?.requestedSeq !== want?.requestedSeq) return false;
              // The record found is the state's own, so deciding it changes the state.
              if (got && !indexed.approvals.includes(got)) return false;
            }
      }
      return true;
    }),
    { numRuns: 300 },
  );
});

t.test('a decision settles the oldest of two pending requests with the same key first', async (t) => {
  const s = emptyState('r', '2026-01-01T00:00:00.000Z');
  const base = { nodeId: 'redzone' as NodeId, owner: 'lead', scope: 'deploy', query: false, reopen: false };
  applyEntry(s, entry(0, { ...base, type: 'approval.requested' }));
  applyEntry(s, entry(1, { ...base, type: 'approval.requested' }));
  t.equal(pendingApprovalCount(s), 2);
  applyEntry(s, entry(2, { ...base, type: 'approval.granted' }));
  t.same(
    s.approvals.map((a) => a.status),
    ['granted', 'pending'],
  );
  t.equal(findPendingApproval(s, 'redzone', 'lead', 'deploy')?.requestedSeq, 1);
  applyEntry(s, entry(3, { ...base, type: 'approval.denied' }));
  t.equal(pendingApprovalCount(s), 0);
  t.equal(findPendingApproval(s, 'redzone', 'lead', 'deploy'), undefined);
  // A decision with nothing pending changes nothing.
  applyEntry(s, entry(4, { ...base, type: 'approval.granted' }));
  t.same(
    s.approvals.map((a) => a.status),
    ['granted', 'denied'],
  );
  t.equal(pendingApprovalCount(s), 0);
});
