import type { RunSummary } from './api.js';

export { approveCommand } from '../../../contract/command-line.js';

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

export function formatAgo(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '';
  const seconds = Math.round((now - new Date(iso).getTime()) / 1000);
  if (!Number.isFinite(seconds)) return '';
  if (seconds < 60) return `${Math.max(0, seconds)} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return `${Math.floor(seconds / 86400)} d ago`;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/**
 * What the approvals list says about the approvals the run view left out (`approvalsOmitted`). The
 * view keeps every pending approval that fits, oldest first, and only then the newest decided
 * ones (src/server/view-bounds.ts): when pending ones overflow, those left out are the NEWER
 * pending ones (and every decided one); otherwise they are the older decided ones.
 */
export function approvalsOmittedNote(omitted: number, pendingShown: number, pendingTotal: number): string {
  const s = (n: number) => (n === 1 ? '' : 's');
  const newerPending = Math.max(0, Math.min(omitted, pendingTotal - pendingShown));
  const decided = omitted - newerPending;
  if (newerPending === 0) {
    return `${omitted} older decided approval${s(omitted)} not shown: the run view keeps every pending approval, then the newest decided ones.`;
  }
  const parts = [`${newerPending} newer pending`, ...(decided > 0 ? [`${decided} decided`] : [])];
  return `${omitted} approval${s(omitted)} not shown (${parts.join(', ')}): the run view keeps the oldest pending approvals that fit; decide those to see the newer ones.`;
}

/**
 * What the run page says when the view shortened node and artifact texts (`textsShortened`): the
 * run view shares a fixed budget among them (src/server/view-bounds.ts), while each event keeps
 * its texts whole, so the operator knows where to read the rest.
 */
export function textsShortenedNote(shortened: number): string {
  const s = shortened === 1 ? '' : 's';
  return `${shortened} node or artifact text${s} shortened to keep this view within the bridge's response limit; the event that set each text holds it whole.`;
}

/** What a run summary says, as the runs list and the run page show it. */
export interface RunFacts {
  currentNode: string;
  events: string;
  pendingApprovals: number | null;
  commissioned: string;
  /** An ISO time, or null when it is unknown. */
  updatedAt: string | null;
}

/**
 * A quarantined run's summary carries placeholders, not facts: no current node, no events, not
 * commissioned, no pending approvals, and the time of the quarantine as `updatedAt`
 * (`quarantinedSummary` in src/server/views.ts), because the record they would come from failed
 * authentication or drifted. Shown as values they would read as the run's state, so they are "—".
 */
export function runFacts(run: RunSummary): RunFacts {
  if (run.status === 'quarantined')
    return { currentNode: '—', events: '—', pendingApprovals: null, commissioned: '—', updatedAt: null };
  return {
    currentNode: run.currentNodeId ?? '—',
    events: String(run.eventCount),
    pendingApprovals: run.pendingApprovals,
    commissioned: run.commissioned ? 'yes' : 'no',
    updatedAt: run.updatedAt,
  };
}

/**
 * The list shows a completed run as its record says (the bridge does not re-hash its evidence for
 * a listing); opening the run checks its artifacts and finish line again.
 */
export const REVERIFICATION_DUE_TITLE =
  'Listed as recorded. Opening the run re-verifies its artifacts and finish line, and quarantines it if its evidence changed.';

/** The events section of a quarantined run: it has no events to show, which is not "none recorded". */
export const QUARANTINED_EVENTS_NOTE =
  'Events are not shown: this run is quarantined, so its record is not trusted.';

/** Node and run states are also spelled out in text: colour is never the only signal. */
export const STATE_LABEL: Readonly<Record<string, string>> = {
  passed: 'passed',
  active: 'active',
  failed: 'failed',
  skipped: 'skipped',
  pending: 'pending',
  needs_approval: 'needs approval',
  running: 'running',
  blocked: 'blocked',
  completed: 'completed',
  quarantined: 'quarantined',
  granted: 'granted',
  denied: 'denied',
};

export const label = (state: string): string => STATE_LABEL[state] ?? state;

/**
 * What an operator can do about a refusal the bridge answered the UI server with, when that is
 * something the page cannot fix: the one credential the UI server holds is not the bridge's.
 */
export function refusalHint(code: string): string | null {
  if (code === 'bridge_auth_required')
    return "The UI server's HARNESS_BRIDGE_ACCESS_TOKEN is not the bridge's: restart `harness ui` with the access token the bridge was started with.";
  return null;
}
