import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Value } from 'typebox/value';
import { NODE_IDS, type NodeId, type NodeState } from '../../src/contract/enums.js';
import {
  type EventPage,
  type EventViewT,
  type RunSummary,
  RunSummaryView,
  RunView,
  type RunViewT,
} from '../../src/contract/views.js';
import { type RecordingUpstream, startRecordingUpstream } from './recording-upstream.js';

/**
 * A stand-in for the bridge's read endpoints, serving views that Value.Check proves conform to
 * src/contract/views.ts, with CONTRACT section 4 paging (newest page without a cursor, page headers,
 * previousCursor/nextCursor). When the real bridge lands, the browser test swaps `startFakeBridge`
 * for a bridge on port 0 seeded with the same runs through POST /runs/:id/events.
 */
export const PENDING = {
  nodeId: 'redzone' as NodeId,
  owner: 'security-lead',
  scope: "deploy to prod's cluster",
};
export const LIVE_RUN = 'alpha-live';
export const QUARANTINED_RUN = 'beta-quarantined';
export const BROKEN_RUN = 'delta-unauthenticated';
export const LIVE_EVENTS = 120;

const T0 = Date.parse('2026-11-20T09:00:00Z');
const at = (seq: number) => new Date(T0 + seq * 7000).toISOString();
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

function summary(id: string, patch: Partial<RunSummary>): RunSummary {
  return {
    id,
    title: null,
    status: 'running',
    runMode: 'live',
    commissioned: false,
    createdAt: at(0),
    updatedAt: at(1),
    currentNodeId: null,
    eventCount: 0,
    eventsTruncated: false,
    pendingApprovals: 0,
    ...patch,
  };
}

function events(count: number): EventViewT[] {
  return Array.from({ length: count }, (_, seq) => {
    const nodeId = NODE_IDS[Math.min(8, Math.floor(seq / 14))] as NodeId;
    return {
      seq,
      id: `ev-${seq}`,
      type: seq === count - 1 ? 'approval.requested' : 'gate.fired',
      ts: at(seq),
      actor: 'runtime-a',
      runMode: 'live',
      eventSource: 'api',
      nodeId,
      message: `step ${seq} on ${nodeId}`,
      status: seq === count - 1 ? 'needs_approval' : 'ok',
      ...(seq === count - 1 ? { approvalOwner: PENDING.owner, approvalScope: PENDING.scope } : {}),
    };
  });
}

function liveRun(): RunViewT {
  const states: NodeState[] = [
    'passed',
    'passed',
    'passed',
    'skipped',
    'passed',
    'passed',
    'failed',
    'active',
    'needs_approval',
  ];
  const nodes = NODE_IDS.map((id, i) => ({
    id,
    state: states[i] ?? 'pending',
    required: id !== 'cloud-platform' && id !== 'live-smoke',
    artifact: i < 3 ? `art/${id}.json` : null,
    artifactVerified: i < 3,
    skipReason: states[i] === 'skipped' ? 'no design surface in this change' : null,
    failureReason: states[i] === 'failed' ? 'terraform plan failed' : null,
    recoveryPath: states[i] === 'failed' ? 'fix the provider pin and re-plan' : null,
    updatedSeq: i < 9 ? i * 14 : null,
  }));
  return {
    ...summary(LIVE_RUN, {
      title: 'Add rate limiting to the API',
      currentNodeId: 'redzone',
      eventCount: LIVE_EVENTS,
      eventsTruncated: true,
      pendingApprovals: 1,
      updatedAt: at(LIVE_EVENTS - 1),
    }),
    metadata: { title: 'Add rate limiting to the API' },
    artifactRootSet: true,
    adapter: null,
    trustPin: 'a'.repeat(64),
    nodes,
    approvals: [
      {
        ...PENDING,
        status: 'pending',
        requestedSeq: 119,
        requestedAt: at(119),
        decidedSeq: null,
        decidedAt: null,
      },
      {
        nodeId: 'implement',
        owner: 'tech-lead',
        scope: 'schema migration',
        status: 'granted',
        requestedSeq: 100,
        requestedAt: at(100),
        decidedSeq: 104,
        decidedAt: at(104),
      },
    ],
    artifacts: nodes.slice(0, 3).map((n, i) => ({
      path: n.artifact ?? '',
      nodeId: n.id,
      sha256: sha(n.id),
      size: 1200 + i,
      mtimeMs: T0,
      seq: i * 14 + 3,
      ts: at(i * 14 + 3),
    })),
    selfHeal: {
      detected: false,
      detectedSeq: null,
      resolved: false,
      resolvedSeq: null,
      prUrl: null,
      artifact: null,
    },
    completionPreview: {
      ready: false,
      problems: ['approval pending: redzone security-lead', 'required node prove is pending'],
    },
    quarantine: null,
  };
}

function quarantinedRun(): RunViewT {
  return {
    ...liveRun(),
    ...summary(QUARANTINED_RUN, { status: 'quarantined', eventCount: 0, currentNodeId: 'handoff' }),
    approvals: [],
    completionPreview: { ready: false, problems: [] },
    quarantine: { reasons: ['artifact proof/proof.json changed after completion'], since: at(50) },
  };
}

export interface FakeBridge extends RecordingUpstream {
  token: string;
}

export async function startFakeBridge(token: string): Promise<FakeBridge> {
  const log = events(LIVE_EVENTS);
  const full: Record<string, RunViewT> = { [LIVE_RUN]: liveRun(), [QUARANTINED_RUN]: quarantinedRun() };
  const broken = summary(BROKEN_RUN, { status: 'quarantined', runMode: null });
  for (const [id, run] of Object.entries(full)) {
    if (!Value.Check(RunView, run)) throw new Error(`fixture ${id} breaks RunView`);
  }
  if (!Value.Check(RunSummaryView, broken)) throw new Error('fixture breaks RunSummaryView');
  const summaries: RunSummary[] = [...Object.values(full).map(toSummary), broken];

  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://bridge');
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
      res.end(JSON.stringify(body));
    };
    if (url.pathname === '/health') return send(200, { ok: true, service: 'harness-bridge' });
    if (req.headers['x-harness-bridge-token'] !== token) {
      return send(401, {
        ok: false,
        error: 'bridge_auth_required',
        message: 'access token required',
        problems: [],
      });
    }
    const num = (name: string, d: number) => Number(url.searchParams.get(name) ?? d);
    if (url.pathname === '/runs') {
      const offset = num('cursor', 0);
      const page = summaries.slice(offset, offset + num('limit', 25));
      return send(
        200,
        { ok: true, runs: page },
        pageHeaders(offset, num('limit', 25), page.length, summaries.length),
      );
    }
    const id = decodeURIComponent(url.pathname.replace(/^\/runs\//, ''));
    if (id === BROKEN_RUN) {
      const page = emptyPage(num('eventLimit', 100));
      return send(200, {
        ok: true,
        run: { ...broken, quarantine: { reasons: ['journal MAC mismatch at seq 4'], since: at(9) } },
        events: [],
        eventPage: page,
      });
    }
    const run = full[id];
    if (!run)
      return send(404, { ok: false, error: 'run_not_found', message: 'no run has this ID', problems: [] });
    const all = id === LIVE_RUN ? log : [];
    const limit = num('eventLimit', 100);
    const cursor = url.searchParams.get('eventCursor');
    const offset = cursor === null ? Math.max(0, all.length - limit) : Math.min(Number(cursor), all.length);
    const slice = all.slice(offset, offset + limit);
    const eventPage: EventPage = {
      offset,
      limit,
      returned: slice.length,
      total: all.length,
      previousCursor: offset > 0 ? String(Math.max(0, offset - limit)) : null,
      nextCursor: offset + slice.length < all.length ? String(offset + slice.length) : null,
      truncated: slice.length < all.length,
      byteLimited: false,
    };
    return send(
      200,
      { ok: true, run, events: slice, eventPage },
      pageHeaders(offset, limit, slice.length, all.length),
    );
  };
  return { ...(await startRecordingUpstream(handler)), token };
}

function toSummary(run: RunViewT): RunSummary {
  const keys = Object.keys(RunSummaryView.properties) as (keyof RunSummary)[];
  return Object.fromEntries(keys.map((k) => [k, run[k]])) as unknown as RunSummary;
}

function emptyPage(limit: number): EventPage {
  return {
    offset: 0,
    limit,
    returned: 0,
    total: 0,
    previousCursor: null,
    nextCursor: null,
    truncated: false,
    byteLimited: false,
  };
}

function pageHeaders(offset: number, limit: number, returned: number, total: number): Record<string, string> {
  const h: Record<string, string> = {
    'x-harness-page-offset': String(offset),
    'x-harness-page-limit': String(limit),
    'x-harness-page-returned': String(returned),
    'x-harness-page-total': String(total),
  };
  if (offset + returned < total) h['x-harness-next-cursor'] = String(offset + returned);
  return h;
}
