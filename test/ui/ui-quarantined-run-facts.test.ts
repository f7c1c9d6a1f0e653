import t from 'tap';
import type { RunSummary } from '../../src/ui/web/src/api.js';
import { runFacts } from '../../src/ui/web/src/format.js';

/**
 * docs/ui.md: a quarantined run shows no derived state. Its summary's current node, event count,
 * commissioned flag, pending approvals and `updatedAt` (the quarantine time) are placeholders the
 * bridge puts in place of a record it no longer trusts, so the UI shows each as unknown.
 */
const running: RunSummary = {
  id: 'r',
  title: null,
  status: 'running',
  runMode: 'live',
  commissioned: true,
  createdAt: '2025-01-01T00:00:00.000Z',
  updatedAt: '2025-01-01T00:05:00.000Z',
  currentNodeId: 'implement',
  eventCount: 12,
  eventsTruncated: true,
  pendingApprovals: 2,
  reverificationDue: false,
};

t.test('a trusted summary is shown as the bridge states it', async (t) => {
  t.same(runFacts(running), {
    currentNode: 'implement',
    events: '12',
    pendingApprovals: 2,
    commissioned: 'yes',
    updatedAt: '2025-01-01T00:05:00.000Z',
  });
  t.same(runFacts({ ...running, currentNodeId: null, eventCount: 0, commissioned: false }), {
    currentNode: '—',
    events: '0',
    pendingApprovals: 2,
    commissioned: 'no',
    updatedAt: '2025-01-01T00:05:00.000Z',
  });
});

t.test('a quarantined summary states none of its placeholders', async (t) => {
  // As the bridge answers one (quarantinedSummary in src/server/views.ts).
  const quarantined: RunSummary = {
    ...running,
    status: 'quarantined',
    runMode: null,
    commissioned: false,
    currentNodeId: null,
    eventCount: 0,
    eventsTruncated: false,
    pendingApprovals: 0,
    updatedAt: '2025-01-02T08:00:00.000Z',
  };
  t.same(runFacts(quarantined), {
    currentNode: '—',
    events: '—',
    pendingApprovals: null,
    commissioned: '—',
    updatedAt: null,
  });
});
