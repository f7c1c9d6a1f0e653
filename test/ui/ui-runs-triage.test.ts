import t from 'tap';
import { RUN_MODES as CONTRACT_MODES, RUN_STATUSES as CONTRACT_STATUSES } from '../../src/contract/enums.js';
import type { RunSummary } from '../../src/ui/web/src/api.js';
import {
  DEFAULT_QUERY,
  parseRunsQuery,
  RUN_MODES,
  RUN_STATUSES,
  runsHash,
  statusCounts,
  triageRuns,
} from '../../src/ui/web/src/runs-triage.js';

const run = (id: string, over: Partial<RunSummary>): RunSummary => ({
  id,
  title: null,
  status: 'running',
  runMode: 'live',
  commissioned: false,
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
  currentNodeId: null,
  eventCount: 1,
  eventsTruncated: true,
  pendingApprovals: 0,
  reverificationDue: false,
  ...over,
});

// Created a, b, c, q in that order; c was updated last, then a; q was quarantined latest of all.
const RUNS = [
  run('a', {
    createdAt: '2026-01-01T00:00:01.000Z',
    updatedAt: '2026-01-01T00:05:00.000Z',
    pendingApprovals: 1,
  }),
  run('b', {
    createdAt: '2026-01-01T00:00:02.000Z',
    updatedAt: '2026-01-01T00:00:02.000Z',
    status: 'blocked',
  }),
  run('c', {
    createdAt: '2026-01-01T00:00:03.000Z',
    updatedAt: '2026-01-01T00:09:00.000Z',
    runMode: 'replay',
  }),
  run('q', {
    createdAt: '2026-01-01T00:00:04.000Z',
    updatedAt: '2026-01-02T00:00:00.000Z',
    status: 'quarantined',
  }),
];
const ids = (q: Partial<typeof DEFAULT_QUERY>) =>
  triageRuns(RUNS, { ...DEFAULT_QUERY, ...q }).map((r) => r.id);

t.test('the web app spells the contract’s statuses and modes', async (t) => {
  t.same([...RUN_STATUSES].sort(), [...CONTRACT_STATUSES].sort());
  t.same([...RUN_MODES].sort(), [...CONTRACT_MODES].sort());
});

t.test('newest activity first by default; a quarantined run by its creation', async (t) => {
  t.same(ids({}), ['c', 'a', 'q', 'b'], 'the quarantine time is a placeholder, not activity');
  t.same(ids({ sort: 'created' }), ['q', 'c', 'b', 'a']);
});

t.test('each filter keeps only what it names', async (t) => {
  t.same(ids({ status: 'blocked' }), ['b']);
  t.same(ids({ mode: 'replay' }), ['c']);
  t.same(ids({ pending: true }), ['a']);
  t.same(ids({ quarantined: 'only' }), ['q']);
  t.same(ids({ quarantined: 'hide' }), ['c', 'a', 'b']);
  t.same(ids({ status: 'running', mode: 'live' }), ['a'], 'filters combine');
  const quarantinedWithPlaceholder = [run('x', { status: 'quarantined', pendingApprovals: 2 })];
  t.same(
    triageRuns(quarantinedWithPlaceholder, { ...DEFAULT_QUERY, pending: true }),
    [],
    'no decision to make',
  );
});

t.test('counts name every status', async (t) => {
  t.same(statusCounts(RUNS), { running: 2, blocked: 1, completed: 0, quarantined: 1 });
});

t.test('a link reproduces the view, and one view has one link', async (t) => {
  t.equal(runsHash(DEFAULT_QUERY), '#/');
  const q = {
    sort: 'created',
    status: 'blocked',
    mode: 'live',
    pending: true,
    quarantined: 'hide',
    page: 3,
  } as const;
  const hash = runsHash(q);
  t.equal(hash, '#/?sort=created&status=blocked&mode=live&pending=1&quarantined=hide&page=3');
  t.same(parseRunsQuery(hash.slice(3)), q);
  t.same(parseRunsQuery('sort=oldest&status=done&mode=x&pending=yes&quarantined=all&page=-1'), DEFAULT_QUERY);
  t.same(parseRunsQuery('page=1.5'), DEFAULT_QUERY, 'a page is a positive integer');
});
