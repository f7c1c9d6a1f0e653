import t, { type Test } from 'tap';
import { RESPONSE_MAX_BYTES } from '../../src/contract/index.js';
import { cleanup, ev, startTestBridge, type TestBridge } from '../helpers/bridge.js';

/**
 * CONTRACT 4: responses stay under 1 MiB. A run's approvals (one per approval.requested, kept
 * forever) and its completion-preview problems (one per pending approval) grow with its history,
 * so the run view bounds them: every pending approval that fits, oldest first, then the newest
 * decided ones, with `approvalsOmitted` counting the rest, and the first problems with one line
 * saying how many more. Each approval here is about 8 KiB: 110 of them stay within the run's
 * approval ceiling (APPROVAL_TEXT_MAX_BYTES, even with 110 grants) while their view (the
 * approvals, and a preview problem quoting each pending one) would pass 1 MiB.
 */
const N = 110;
const owner = 'o'.repeat(4000);
const scope = (i: number) => `scope-${String(i).padStart(4, '0')}-${'s'.repeat(3980)}`;
const request = (i: number) =>
  ev({
    type: 'approval.requested',
    nodeId: 'redzone',
    status: 'needs_approval',
    approvalOwner: owner,
    approvalScope: scope(i),
  });
const grant = (i: number) =>
  ev({
    type: 'approval.granted',
    actor: 'human',
    nodeId: 'redzone',
    approvalOwner: owner,
    approvalScope: scope(i),
  });

const bytes = (body: unknown) => Buffer.byteLength(JSON.stringify(body));

async function post(t: Test, b: TestBridge, runId: string, body: Record<string, unknown>, human = false) {
  const headers: Record<string, string> = human
    ? { 'x-harness-human-token': b.t.env['HARNESS_HUMAN_APPROVAL_TOKEN'] ?? '' }
    : {};
  const r = await b.req('POST', `/runs/${runId}/events`, body, headers);
  t.equal(r.status, 201);
  t.ok(bytes(r.body) < 64 * 1024, 'the 201 answer carries a summary, never the approvals');
}

t.test('pending approvals whose view would pass 1 MiB: the oldest that fit are shown', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  for (let i = 0; i < N; i++) await post(t, b, 'pending', request(i));

  const got = await b.req('GET', '/runs/pending');
  t.equal(got.status, 200);
  t.ok(bytes(got.body) < RESPONSE_MAX_BYTES, `GET body ${bytes(got.body)} bytes is under 1 MiB`);
  const run = got.body['run'];
  t.equal(run.pendingApprovals, N, 'the summary counts every pending approval');
  t.ok(run.approvalsOmitted > 0, 'some approvals are left out');
  t.equal(run.approvals.length + run.approvalsOmitted, N, 'shown plus omitted is every approval');
  t.same(
    run.approvals.map((a: any) => a.scope),
    Array.from({ length: run.approvals.length }, (_, i) => scope(i)),
    'the oldest pending approvals, in request order',
  );
  t.equal(run.completionPreview.ready, false);
  const problems: string[] = run.completionPreview.problems;
  t.ok(problems.length < N, 'the problems are cut');
  t.match(problems.at(-1), /^\d+ more problems not shown$/);
  t.ok(got.body['run'].eventPage.returned > 0, 'room is left for an event page');

  const sync = await b.req('POST', '/runs', { id: 'pending' });
  t.equal(sync.status, 200);
  t.ok(bytes(sync.body) < RESPONSE_MAX_BYTES, `POST /runs body ${bytes(sync.body)} bytes is under 1 MiB`);
  t.equal(sync.body['run'].approvalsOmitted, run.approvalsOmitted);
});

t.test('decided approvals past the view budget: pending ones and the newest decided are shown', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  for (let i = 0; i < N; i++) {
    await post(t, b, 'decided', request(i));
    await post(t, b, 'decided', grant(i), true);
  }
  await post(t, b, 'decided', request(N));

  const got = await b.req('GET', '/runs/decided');
  t.equal(got.status, 200);
  t.ok(bytes(got.body) < RESPONSE_MAX_BYTES, `GET body ${bytes(got.body)} bytes is under 1 MiB`);
  const run = got.body['run'];
  const shown: any[] = run.approvals;
  t.ok(run.approvalsOmitted > 0);
  t.equal(shown.length + run.approvalsOmitted, N + 1);
  t.same(shown.at(-1), { ...shown.at(-1), status: 'pending', scope: scope(N) }, 'the pending one is shown');
  const decided = shown.slice(0, -1);
  t.ok(decided.length > 0, 'decided ones fill the rest');
  t.same(
    decided.map((a) => a.scope),
    Array.from({ length: decided.length }, (_, i) => scope(N - decided.length + i)),
    'the newest decided approvals, in request order',
  );
  t.ok(
    decided.every((a) => a.status === 'granted'),
    'all decided',
  );
});

t.test('a run view within the ceiling omits nothing', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  await post(t, b, 'small', request(0));
  const run = (await b.req('GET', '/runs/small')).body['run'];
  t.equal(run.approvals.length, 1);
  t.equal(run.approvalsOmitted, 0);
  t.equal(run.completionPreview.problems.at(-1).endsWith('is still pending'), true);
});
