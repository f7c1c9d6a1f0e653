import type { RunSummary } from './api.js';

export type RunStatus = RunSummary['status'];
export type RunMode = NonNullable<RunSummary['runMode']>;
/**
 * The contract's run statuses and modes (src/contract/enums.ts), spelled here because that module
 * brings TypeBox into the browser; test/ui/ui-runs-triage.test.ts checks the two agree.
 */
export const RUN_STATUSES = [
  'running',
  'blocked',
  'completed',
  'quarantined',
] as const satisfies readonly RunStatus[];
export const RUN_MODES = ['live', 'replay', 'blueprint'] as const satisfies readonly RunMode[];

/** `updated`: newest activity first (the default); `created`: newest run first. */
export type RunSort = 'updated' | 'created';
/** Quarantined runs: listed with the others, the only ones listed, or left out. */
export type QuarantineFilter = 'any' | 'only' | 'hide';

/** The runs list's view, all of it in the URL (`#/?sort=created&status=blocked&page=2`). */
export interface RunsQuery {
  sort: RunSort;
  status: RunStatus | null;
  mode: RunMode | null;
  /** Only runs with at least one pending approval. */
  pending: boolean;
  quarantined: QuarantineFilter;
  /** 1-based page of the filtered list. */
  page: number;
}

export const DEFAULT_QUERY: RunsQuery = {
  sort: 'updated',
  status: null,
  mode: null,
  pending: false,
  quarantined: 'any',
  page: 1,
};

const oneOf = <T extends string>(values: readonly T[], v: string | null): T | null =>
  v !== null && (values as readonly string[]).includes(v) ? (v as T) : null;

/**
 * The view a link names. The hash is the user's (pasted, edited): a value outside its set is the
 * default, never an error, so any link opens some list.
 */
export function parseRunsQuery(search: string): RunsQuery {
  const p = new URLSearchParams(search);
  const page = Number(p.get('page'));
  return {
    sort: oneOf(['updated', 'created'] as const, p.get('sort')) ?? DEFAULT_QUERY.sort,
    status: oneOf(RUN_STATUSES, p.get('status')),
    mode: oneOf(RUN_MODES, p.get('mode')),
    pending: p.get('pending') === '1',
    quarantined: oneOf(['only', 'hide'] as const, p.get('quarantined')) ?? 'any',
    page: Number.isSafeInteger(page) && page >= 1 ? page : 1,
  };
}

/** The hash that reproduces `q`: defaults left out, names in one order, so one view has one link. */
export function runsHash(q: RunsQuery): string {
  const p = new URLSearchParams();
  if (q.sort !== DEFAULT_QUERY.sort) p.set('sort', q.sort);
  if (q.status) p.set('status', q.status);
  if (q.mode) p.set('mode', q.mode);
  if (q.pending) p.set('pending', '1');
  if (q.quarantined !== 'any') p.set('quarantined', q.quarantined);
  if (q.page > 1) p.set('page', String(q.page));
  const s = p.toString();
  return s ? `#/?${s}` : '#/';
}

const ms = (iso: string): number => {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? 0 : t;
};

/**
 * When a run last changed, as the list sorts it. A quarantined run's `updatedAt` is the time of the
 * quarantine, a placeholder rather than a fact of its record, so it sorts by its creation instead.
 */
const activityMs = (r: RunSummary): number => ms(r.status === 'quarantined' ? r.createdAt : r.updatedAt);

function matches(r: RunSummary, q: RunsQuery): boolean {
  if (q.status && r.status !== q.status) return false;
  if (q.mode && r.runMode !== q.mode) return false;
  // A quarantined run's pending count is a placeholder too: it has none to decide.
  if (q.pending && (r.status === 'quarantined' || r.pendingApprovals === 0)) return false;
  if (q.quarantined === 'only' && r.status !== 'quarantined') return false;
  if (q.quarantined === 'hide' && r.status === 'quarantined') return false;
  return true;
}

/**
 * The runs `q` keeps, newest first by its sort, ties by newest creation then ID. `runs` is the
 * bounded window the list reads (run-window.ts), so this sorts at most that many.
 */
export function triageRuns(runs: readonly RunSummary[], q: RunsQuery): RunSummary[] {
  const keyed = runs
    .filter((r) => matches(r, q))
    .map((r) => ({ r, key: q.sort === 'updated' ? activityMs(r) : ms(r.createdAt), born: ms(r.createdAt) }));
  keyed.sort((a, b) => b.key - a.key || b.born - a.born || (a.r.id < b.r.id ? -1 : a.r.id > b.r.id ? 1 : 0));
  return keyed.map((k) => k.r);
}

/** How many runs of `runs` are in each status, every status named (zero included). */
export function statusCounts(runs: readonly RunSummary[]): Record<RunStatus, number> {
  const counts = Object.fromEntries(RUN_STATUSES.map((s) => [s, 0])) as Record<RunStatus, number>;
  for (const r of runs) counts[r.status]++;
  return counts;
}
