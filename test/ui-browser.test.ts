import { mkdtempSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Request } from 'playwright-core';
import t from 'tap';
import { DEFAULT_ARTIFACT_BY_NODE, NODE_IDS, type NodeId, TEXT_FIELD_MAX } from '../src/contract/index.js';
import { runPaths } from '../src/storage/paths.js';
import { formatGap } from '../src/ui/web/src/event-scan.js';
import { ev, makeTestEnv, startTestBridge, type TestBridge } from './helpers/bridge.js';
import { complete, driveToReady } from './helpers/complete-run.js';
import { ROOT } from './helpers/paths.js';
import {
  buildWeb,
  laneEventsCounted,
  launchBrowser,
  requireChromium,
  seriousAxeViolations,
  startUiFor,
} from './helpers/ui-browser.js';

/**
 * The operator UI in headless Debian Chromium against the REAL bridge: runs are seeded through
 * POST /runs and POST /runs/:id/events, quarantine is produced by editing a completed run's
 * artifact (re-verified on read) and by flipping a byte in another run's journal before a restart
 * (re-authenticated on open). The UI server holds only the access token.
 */
// Screenshots for the docs are written only by `npm run screenshots` (HARNESS_UPDATE_SCREENSHOTS=1),
// so a test run never dirties the tree; otherwise they go to a throwaway directory.
const SHOTS =
  process.env['HARNESS_UPDATE_SCREENSHOTS'] === '1'
    ? join(ROOT, 'docs/screenshots/')
    : mkdtempSync(join(tmpdir(), 'harness-shots-'));

requireChromium();

const LIVE_RUN = 'alpha-live';
const COMPLETED_RUN = 'beta-completed';
const DRIFTED_RUN = 'gamma-drifted';
const TAMPERED_RUN = 'delta-tampered';
const LONG_TEXTS_RUN = 'epsilon-long-texts';
const BLUEPRINT_RUN = 'zeta-blueprint';
/** The widths the docs' screenshots and the accessibility check are taken at. */
const WIDE = { width: 1400, height: 900 };
const NARROW = { width: 420, height: 900 };
const FILLER_EVENTS = 150;
const PENDING = { owner: 'security-lead', scope: "deploy to prod's cluster" };
const DECIDED = { owner: 'tech-lead', scope: 'schema migration' };
const SKIP_REASON = 'no design surface in this change';
const FAILURE = 'terraform plan failed: provider pin drifted';
const RECOVERY = 'pin the provider and re-plan';

const te = await makeTestEnv();
const ACCESS = te.env['HARNESS_BRIDGE_ACCESS_TOKEN'] as string;
const HUMAN = te.env['HARNESS_HUMAN_APPROVAL_TOKEN'] as string;
const INTEGRITY = te.env['HARNESS_BRIDGE_INTEGRITY_KEY'] as string;

/** The same bridge, writing a run's artifacts under its own root (driveToReady uses `t.artifactRoot`). */
async function withRoot(b: TestBridge, name: string): Promise<TestBridge> {
  const artifactRoot = join(te.dir, `artifacts-${name}`);
  await mkdir(artifactRoot, { recursive: true });
  return { ...b, t: { ...b.t, artifactRoot } };
}

/** Posts one event and insists on 201: the seed is real bridge traffic, refusals stop the test. */
async function post(b: TestBridge, runId: string, body: Record<string, unknown>, human = false) {
  const r = await b.req(
    'POST',
    `/runs/${runId}/events`,
    body,
    human ? { 'x-harness-human-token': HUMAN } : {},
  );
  if (r.status !== 201) throw new Error(`${runId} ${String(body['type'])}: ${JSON.stringify(r.body)}`);
  return r.body;
}

/**
 * A running run: passed nodes with verified artifacts, a skip with its reason, a failure with its
 * reasons, an active node with many gate events and a granted approval, and a pending approval.
 * Returns the number of events posted.
 */
async function seedLiveRun(bridge: TestBridge): Promise<number> {
  const b = await withRoot(bridge, LIVE_RUN);
  let count = 0;
  const send = async (body: Record<string, unknown>, human = false) => {
    await post(b, LIVE_RUN, ev(body), human);
    count++;
  };
  const pass = async (nodeId: NodeId) => {
    const path = DEFAULT_ARTIFACT_BY_NODE[nodeId];
    await mkdir(dirname(join(b.t.artifactRoot, path)), { recursive: true });
    await writeFile(join(b.t.artifactRoot, path), `artifact of ${nodeId}\n`);
    await send({ nodeId, message: `entered ${nodeId}` });
    await send({ type: 'artifact.written', nodeId, artifact: path, message: `wrote ${path}` });
    await send({
      type: 'gate.fired',
      nodeId,
      nodeState: 'passed',
      status: 'passed',
      message: `${nodeId} passed`,
    });
  };
  await send({ type: 'run.created', message: 'run created by runtime-a' });
  for (const nodeId of ['intake', 'route', 'code-intelligence'] as const) await pass(nodeId);
  await send({
    type: 'node.skipped',
    nodeId: 'design-anchors',
    status: 'skipped',
    skipReason: SKIP_REASON,
    message: 'skipped design anchors',
  });
  for (const nodeId of ['system-design', 'production-readiness'] as const) await pass(nodeId);
  await send({ nodeId: 'cloud-platform', message: 'entered cloud-platform' });
  await send({
    type: 'node.failed',
    nodeId: 'cloud-platform',
    status: 'failed',
    failureReason: FAILURE,
    recoveryPath: RECOVERY,
    message: 'cloud platform check failed',
  });
  await send({ nodeId: 'implement', message: 'entered implement' });
  // Concurrent posts share the journal's group commit; their order among themselves is the bridge's.
  await Promise.all(
    Array.from({ length: FILLER_EVENTS }, (_, i) =>
      send({ type: 'gate.fired', nodeId: 'implement', message: `implement check ${i}` }),
    ),
  );
  const decided = { nodeId: 'implement', approvalOwner: DECIDED.owner, approvalScope: DECIDED.scope };
  await send({
    type: 'approval.requested',
    status: 'needs_approval',
    message: 'migration needs a lead',
    ...decided,
  });
  await send({ type: 'approval.granted', actor: 'human', message: 'go ahead', ...decided }, true);
  await send({
    type: 'approval.requested',
    nodeId: 'redzone',
    status: 'needs_approval',
    approvalOwner: PENDING.owner,
    approvalScope: PENDING.scope,
    message: 'production deploy needs security sign-off',
  });
  return count;
}

// A first bridge process records a short run; one byte of its journal is then flipped and the
// bridge restarted on the same data directory, which must re-authenticate the run from disk.
/**
 * A run whose node texts are past the run view's shared budget (VIEW_TEXTS_MAX_BYTES): each node
 * skipped, then failed, every reason at TEXT_FIELD_MAX two-byte characters.
 */
async function seedLongTexts(b: TestBridge): Promise<void> {
  // Two-byte characters: a skip reason at its limit, and a failure's two reasons within one event.
  const long = (c: string, n = TEXT_FIELD_MAX) => c.repeat(n);
  for (const nodeId of NODE_IDS) {
    await post(
      b,
      LONG_TEXTS_RUN,
      ev({ type: 'node.skipped', nodeId, status: 'skipped', skipReason: long('é') }),
    );
    await post(
      b,
      LONG_TEXTS_RUN,
      ev({
        type: 'node.failed',
        nodeId,
        status: 'failed',
        failureReason: long('ü', 3500),
        recoveryPath: long('ö', 3500),
        message: `${nodeId} failed`,
      }),
    );
  }
}

const first = await startTestBridge(te);
await post(
  await withRoot(first, TAMPERED_RUN),
  TAMPERED_RUN,
  ev({ type: 'run.created', message: 'run created' }),
);
await post(first, TAMPERED_RUN, ev({ message: 'entered intake' }));
await post(first, TAMPERED_RUN, ev({ type: 'gate.fired', message: 'intake checked' }));
await first.close();
const journalPath = runPaths(te.dataDir, TAMPERED_RUN).journal;
const journal = await readFile(journalPath);
const at = journal.indexOf('entered intake');
if (at < 0) throw new Error('the tampered run journal does not hold the seeded event');
journal[at] = 'E'.charCodeAt(0);
await writeFile(journalPath, journal);

const bridge = await startTestBridge(te);
const completeRun = async (id: string) => {
  const b = await withRoot(bridge, id);
  await driveToReady(b, id);
  const done = await complete(b, id);
  if (done.status !== 201) throw new Error(`${id} did not complete: ${JSON.stringify(done.body)}`);
};
// Creation order first (the runs list can sort by it), then the runs in parallel, as the bridge
// allows; the web app is built meanwhile, fresh into a temp dir so the test never reads a stale dist/ui.
for (const id of [LIVE_RUN, COMPLETED_RUN, DRIFTED_RUN]) {
  const created = await bridge.req('POST', '/runs', {
    id,
    ...(id === LIVE_RUN ? { title: 'Add rate limiting to the API' } : {}),
    artifactRoot: (await withRoot(bridge, id)).t.artifactRoot,
  });
  if (created.status !== 201) throw new Error(`create ${id}: ${JSON.stringify(created.body)}`);
}
await post(
  bridge,
  BLUEPRINT_RUN,
  ev({
    type: 'run.created',
    runMode: 'blueprint',
    eventSource: 'static-blueprint',
    message: 'the flow as designed',
  }),
);
const work = await mkdtemp(join(tmpdir(), 'harness-ui-browser-'));
const webRoot = join(work, 'web');
const [liveEvents] = await Promise.all([
  seedLiveRun(bridge),
  seedLongTexts(bridge),
  completeRun(COMPLETED_RUN),
  completeRun(DRIFTED_RUN),
  buildWeb(webRoot),
]);
// A completed run whose required artifact changes afterwards is re-verified on the next read.
await writeFile(join(te.dir, `artifacts-${DRIFTED_RUN}`, DEFAULT_ARTIFACT_BY_NODE.handoff), 'edited\n');

// The UI server's configuration comes from an environment holding the access token and nothing stronger.
const ui = await startUiFor(bridge.url, ACCESS, webRoot);
const { context, page } = await launchBrowser(join(work, 'profile'));
await page.setViewportSize(WIDE);
t.teardown(async () => {
  await context.close();
  await ui.app.close();
  await bridge.close();
  await rm(work, { recursive: true, force: true });
  await rm(te.dir, { recursive: true, force: true });
});

/** Every response body the browser receives, checked at the end for every credential. */
const bodies: Promise<{ url: string; text: string }>[] = [];
const requests: Request[] = [];
page.on('response', (res) => {
  bodies.push(
    res.body().then(
      (b) => ({ url: res.url(), text: b.toString('latin1') }),
      () => ({ url: res.url(), text: '' }),
    ),
  );
});
page.on('request', (req) => requests.push(req));

/** Page-side code as strings: the test program has no DOM types, the page has no test code. */
const setHidden = (hidden: boolean) =>
  `Object.defineProperty(document, 'hidden', { configurable: true, get: () => ${hidden} });
   document.dispatchEvent(new Event('visibilitychange'));`;
const eventsLine = page.locator('#events-heading + p');
const seqs = () =>
  page.locator('.timeline > li').evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-seq'))));
const runPath = (id: string) => `/api/bridge/runs/${id}`;
const isPoll = (id: string) => (req: Request) => new URL(req.url()).pathname === runPath(id);
/** The run page's facts list, term to shown value, for the terms of `UNKNOWN_FACTS` and Status. */
const facts = async () => {
  const all = await page
    .locator('dl.facts > div')
    .evaluateAll((els) =>
      els.map((e) => [e.querySelector('dt')?.textContent ?? '', e.querySelector('dd')?.textContent ?? '']),
    );
  const shown = new Map(all.map(([k, v]) => [k, v]));
  return Object.fromEntries(['Status', ...Object.keys(UNKNOWN_FACTS)].map((k) => [k, shown.get(k)]));
};
/** What a quarantined run's page must not state: its summary's placeholders are unknowns. */
const UNKNOWN_FACTS = { 'Current node': '—', Events: '—', Commissioned: '—', 'Last update': '—' };
const QUARANTINED_EVENTS = 'Events are not shown: this run is quarantined, so its record is not trusted.';

t.test('the runs list shows every seeded run with the bridge’s status, mode, node and counts', async (t) => {
  await page.goto(`${ui.origin}/#/?sort=created`);
  await page.locator('table.runs tbody tr').nth(5).waitFor();
  const rows = page.locator('table.runs tbody tr');
  t.equal(await rows.count(), 6);
  t.same(
    await rows.evaluateAll((els) => els.map((e) => e.getAttribute('data-run-id'))),
    [LONG_TEXTS_RUN, BLUEPRINT_RUN, DRIFTED_RUN, COMPLETED_RUN, LIVE_RUN, TAMPERED_RUN],
    'newest created first',
  );
  const cells = (id: string) =>
    page
      .locator(`tr[data-run-id="${id}"] td`)
      .evaluateAll((els) => els.map((e) => (e.textContent ?? '').trim()));
  const live = await cells(LIVE_RUN);
  // A summary carries no events (`eventsTruncated` is always true): the count is the run's, whole.
  t.same(live.slice(0, 5), ['running', 'live', 'redzone', String(liveEvents), '1']);
  t.match(live[5], /ago|just now/);
  t.match(await page.locator(`tr[data-run-id="${LIVE_RUN}"] th`).textContent(), /Add rate limiting/);
  // The list comes from the bridge's run index: a completed run as its record says, marked as
  // re-verified when opened; a run is authenticated when opened, so the drift and the tampering
  // seeded behind the bridge show once each run is read (the next test), and the list then agrees.
  const completed = await cells(COMPLETED_RUN);
  t.same(completed.slice(1, 3), ['live', 'handoff']);
  t.equal(completed[0], 'completedas recorded; re-verified when opened');
  t.equal((await cells(DRIFTED_RUN))[0], 'completedas recorded; re-verified when opened');
  // The "Needs you" panel reads the views of the most recently active running runs (for failed
  // nodes), and a read authenticates the run: the tampered one then lists as quarantined.
  await page.locator(`tr[data-run-id="${TAMPERED_RUN}"] .badge.s-quarantined`).waitFor({ timeout: 5000 });
  t.equal((await cells(TAMPERED_RUN))[0], 'quarantined');
  t.match(await page.getByRole('status').textContent(), /Connected/);
  await page.screenshot({ path: join(SHOTS, 'runs-list.png') });
  t.same(await seriousAxeViolations(page), [], 'no serious or critical accessibility violation at 1400 px');
});

t.test('a run opens from the keyboard and shows the lane with every seeded node state', async (t) => {
  for (let i = 0; i < 30; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate(`document.activeElement?.textContent === '${LIVE_RUN}'`)) break;
  }
  await page.keyboard.press('Enter');
  await page.locator('.lane > li').nth(13).waitFor();
  t.equal(page.url(), `${ui.origin}/#/runs/${LIVE_RUN}`);
  const lane = await page
    .locator('.lane > li')
    .evaluateAll((els) =>
      els.map((e) => [
        e.getAttribute('data-node-id'),
        e.getAttribute('data-state'),
        e.querySelector('.req') ? 'req' : 'opt',
      ]),
    );
  t.same(
    lane.map(([id, state]) => [id, state]),
    [
      ['intake', 'passed'],
      ['route', 'passed'],
      ['code-intelligence', 'passed'],
      ['design-anchors', 'skipped'],
      ['system-design', 'passed'],
      ['production-readiness', 'passed'],
      ['cloud-platform', 'failed'],
      ['implement', 'active'],
      ['redzone', 'needs_approval'],
      ['qa-break-it', 'pending'],
      ['prove', 'pending'],
      ['live-smoke', 'pending'],
      ['self-heal', 'pending'],
      ['handoff', 'pending'],
    ],
  );
  t.same(lane[0]?.[2], 'req', 'intake is required');
  const node = (id: string) => page.locator(`.lane > li[data-node-id="${id}"]`);
  t.match(await node('intake').textContent(), /passed[\s\S]*artifact verified/);
  t.match(await node('design-anchors').textContent(), `Skipped: ${SKIP_REASON}`);
  t.match(await node('cloud-platform').textContent(), `Failed: ${FAILURE}`);
  t.match(await node('cloud-platform').textContent(), `Recovery: ${RECOVERY}`);
  t.match(await node('redzone').textContent(), /needs approval/);
  t.equal(await page.locator('.lane > li[aria-current="step"]').getAttribute('data-node-id'), 'redzone');
  t.match(
    await page.locator('.completion').textContent(),
    /Cannot complete yet[\s\S]*redzone[\s\S]*security-lead/,
    'the preview names the pending approval as a blocker',
  );
  const artifacts = await page.locator('table.artifacts tbody tr').allTextContents();
  t.equal(artifacts.length, 5, 'one row per written artifact');
  t.match(artifacts[0], /run\/intake\.json[\s\S]*intake[\s\S]*yes[\s\S]*[0-9a-f]{64}/);
});

t.test('the pending approval shows owner, scope and the exact approve command', async (t) => {
  const pending = page.locator('[data-approval-status="pending"]');
  t.equal(await pending.count(), 1);
  t.match(await pending.textContent(), /redzone[\s\S]*security-lead[\s\S]*deploy to prod's cluster/);
  const commands = await pending.locator('.approve-command').allTextContents();
  t.same(commands, [
    `harness approve ${LIVE_RUN} --owner security-lead --scope 'deploy to prod'\\''s cluster' --grant`,
    `harness approve ${LIVE_RUN} --owner security-lead --scope 'deploy to prod'\\''s cluster' --deny --failure-reason (why-the-node-fails) --recovery-path (what-happens-next)`,
  ]);
  t.match(
    await page.locator('table.decided').textContent(),
    /implement[\s\S]*tech-lead[\s\S]*schema migration[\s\S]*granted/,
  );
  // From the top to the first few events: the lane, approvals and artifacts sit below the fold.
  const events = await page.locator('#events-heading').boundingBox();
  t.ok(events, 'the events section is laid out');
  await page.screenshot({
    path: join(SHOTS, 'run-view.png'),
    fullPage: true,
    clip: { x: 0, y: 0, width: WIDE.width, height: Math.round((events?.y ?? 900) + 420) },
  });
  t.same(await seriousAxeViolations(page), [], 'no serious or critical accessibility violation at 1400 px');
});

t.test('the completion panel shows each problem with the fix the bridge gives it', async (t) => {
  const panel = page.locator('section.completion');
  t.match(await panel.textContent(), /required node cloud-platform is failed, not passed/);
  const fixes = await panel.locator('.fix-command').allTextContents();
  t.ok(
    fixes.includes(`harness node pass ${LIVE_RUN} cloud-platform --artifact cloud/service-map.json`),
    'the failed node: pass it with its artifact',
  );
  t.ok(
    fixes.includes(
      `harness approve ${LIVE_RUN} --owner security-lead --scope 'deploy to prod'\\''s cluster' --grant`,
    ),
    'the pending approval: the approve command the approvals list shows',
  );
  t.equal(fixes.length, await panel.locator('ul.problems > li').count(), 'one fix per problem');
});

t.test(
  'the completion checklist groups the problems by kind, counts from the run, open where blocked',
  async (t) => {
    const panel = page.locator('section.completion');
    const group = (id: string) => panel.locator(`details.check-group[data-group="${id}"]`);
    const summaries = await panel
      .locator('details.check-group > summary')
      .evaluateAll((els) => els.map((e) => (e.textContent ?? '').trim()));
    const withArtifact = NODE_IDS.filter((id) => DEFAULT_ARTIFACT_BY_NODE[id] !== undefined).length;
    t.same(summaries, [
      // Eight required nodes are not passed; nine artifacts are not verified (the skipped node's too).
      '✕ Nodes 5/14 passed, 1 skipped · 8 blocking',
      `✕ Artifacts 5/${withArtifact} verified · ${withArtifact - 5} blocking`,
      '✕ Approvals 1 pending, 1 decided · 1 blocking',
      '✓ Self-heal not needed (nothing detected) · nothing blocks',
      '✓ Proof: node prove is pending · nothing blocks',
      '✓ Production readiness: node production-readiness is passed · nothing blocks',
    ]);
    const problems = async (id: string) =>
      group(id)
        .locator('ul.problems > li')
        .evaluateAll((els) => els.map((e) => e.firstChild?.textContent ?? ''));
    t.ok(
      (await problems('nodes')).includes('required node cloud-platform is failed, not passed'),
      'a node problem is under nodes',
    );
    t.same((await problems('approvals')).length, 1, 'the pending approval, and only it, under approvals');
    t.match(await group('approvals').locator('.fix-command').textContent(), /--owner security-lead/);
    const shown = [
      ...(await problems('nodes')),
      ...(await problems('artifacts')),
      ...(await problems('approvals')),
    ];
    const view = await bridge.req('GET', `/runs/${LIVE_RUN}?eventLimit=1`);
    const preview = (view.body['run'] as { completionPreview: { problems: string[] } }).completionPreview;
    t.same(shown.sort(), [...preview.problems].sort(), 'every problem the bridge gives, each once');
    t.equal(await group('approvals').getAttribute('open'), '', 'a group blocked by a few problems is open');
    t.equal(await group('nodes').getAttribute('open'), null, 'one with more is closed, its count shown');
    t.equal(await group('self-heal').getAttribute('open'), null, 'a clear group is closed');
    // A native disclosure: the keyboard opens and closes it.
    await group('nodes').locator('summary').focus();
    await page.keyboard.press('Enter');
    t.equal(await group('nodes').getAttribute('open'), '', 'Enter on its summary opens a group');
    t.equal(await group('nodes').locator('ul.problems').isVisible(), true);
    await page.keyboard.press('Enter');
    t.equal(await group('nodes').getAttribute('open'), null, 'and closes it again');
    t.equal(await group('nodes').locator('ul.problems').isVisible(), false);
  },
);

/** Each node's event count and time spent, as the lane must show them: counted from the bridge's own pages. */
async function laneExpectations(runId: string, now: number) {
  const events: { seq: number; ts: string; nodeId: string }[] = [];
  for (let cursor: number | null = 0; cursor !== null; ) {
    const r = await bridge.req('GET', `/runs/${runId}?eventLimit=200&eventCursor=${cursor}`);
    const run = r.body['run'] as {
      events: typeof events;
      eventPage: { nextCursor: string | null; returned: number };
      nodes: { id: string; state: string; updatedSeq: number | null }[];
    };
    events.push(...run.events);
    cursor =
      run.eventPage.nextCursor === null || run.eventPage.returned === 0
        ? null
        : Number(run.eventPage.nextCursor);
    if (cursor === null)
      return run.nodes.map((n) => {
        const mine = events.filter((e) => e.nodeId === n.id).sort((a, b) => a.seq - b.seq);
        const start = mine[0] ? Date.parse(mine[0].ts) : 0;
        const settled = ['passed', 'failed', 'skipped'].includes(n.state);
        const end = settled ? mine.find((e) => e.seq === n.updatedSeq)?.ts : undefined;
        return {
          id: n.id,
          count: mine.length,
          newest: mine
            .slice(-20)
            .reverse()
            .map((e) => e.seq),
          spent: mine.length === 0 ? null : settled ? formatGap(Date.parse(end ?? '') - start) : now - start,
        };
      });
  }
  return [];
}

t.test('the lane shows each node’s events count and time spent, and lists its events', async (t) => {
  await page.goto(`${ui.origin}/#/runs/${LIVE_RUN}`);
  const trace = (id: string) => page.locator(`.lane > li[data-node-id="${id}"] .node-trace`);
  t.equal(await laneEventsCounted(page, liveEvents), liveEvents, 'each event read is counted at its node');
  const expected = await laneExpectations(LIVE_RUN, Date.now());
  t.same(
    expected.filter((n) => n.count > 0).map((n) => [n.id, n.count]),
    [
      ['intake', 4],
      ['route', 3],
      ['code-intelligence', 3],
      ['design-anchors', 1],
      ['system-design', 3],
      ['production-readiness', 3],
      ['cloud-platform', 2],
      ['implement', FILLER_EVENTS + 3],
      ['redzone', 1],
    ],
    'the seed, as the bridge counts it',
  );
  for (const n of expected) {
    const text = (await trace(n.id).textContent()) ?? '';
    t.equal(await trace(n.id).getAttribute('data-events'), String(n.count), `${n.id}: its events count`);
    if (n.spent === null) t.equal(text, 'no events', `${n.id}: no events`);
    else if (typeof n.spent === 'string')
      t.equal(text, `${n.count} event${n.count === 1 ? '' : 's'} · ${n.spent}`, `${n.id}: settled, its time`);
    else t.match(text, new RegExp(`^${n.count} events? · .+ so far$`), `${n.id}: open, time so far`);
  }
  const list = (id: string) => page.locator(`#node-events-${id}`);
  t.equal(await list('intake').isVisible(), false, 'no list until asked');
  await page.locator('.lane > li[data-node-id="intake"]').hover();
  t.equal(await list('intake').isVisible(), true, 'hovering a node lists its events');
  t.equal(await list('intake').getAttribute('role'), 'tooltip');
  const seqsOf = (id: string) =>
    list(id)
      .locator('li')
      .evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-seq'))));
  t.same(await seqsOf('intake'), expected.find((n) => n.id === 'intake')?.newest, 'its events, newest first');
  await page.mouse.move(0, 0);
  t.equal(await list('intake').isVisible(), false);
  // Keyboard: focusing a node's events button shows the list it is described by; Escape hides it.
  await trace('implement').focus();
  t.equal(await trace('implement').getAttribute('aria-describedby'), 'node-events-implement');
  t.equal(await list('implement').isVisible(), true, 'focusing a node lists its events');
  t.match(await list('implement').textContent(), `Its newest 20 of ${FILLER_EVENTS + 3} events`);
  t.same(await seqsOf('implement'), expected.find((n) => n.id === 'implement')?.newest);
  await page.keyboard.press('Escape');
  t.equal(await list('implement').isVisible(), false, 'Escape hides it');
  await page.keyboard.press('Enter');
  t.equal(await trace('implement').getAttribute('aria-expanded'), 'true', 'the button pins it open');
  t.equal(await list('implement').isVisible(), true);
  await page.locator('#flow-heading').click();
  t.equal(await list('implement').isVisible(), true, 'and it stays when the focus leaves');
  await trace('implement').click();
  t.equal(await list('implement').isVisible(), false, 'until the button is pressed again');
});

t.test('events page newest first, older pages on demand, back to newest', async (t) => {
  const total = liveEvents;
  const older = page.getByRole('button', { name: 'Older events' }).first();
  t.match(
    await eventsLine.textContent(),
    `Events #${total - 50}–#${total - 1} of ${total}, newest first (live)`,
  );
  const newest = await seqs();
  t.equal(newest.length, 50);
  t.same(newest.slice(0, 2), [total - 1, total - 2], 'newest first');
  t.match(await page.locator('.timeline > li').first().textContent(), /approval\.requested[\s\S]*redzone/);
  // Walk back page by page until the first event; every seq appears exactly once.
  const seen = [...newest];
  let end = total - 50;
  while (end > 0) {
    const start = Math.max(0, end - 50);
    await older.click();
    await page.getByText(`Events #${start}–#${end - 1} of ${total}, newest first (older page)`).waitFor();
    const shown = await seqs();
    t.same(
      shown,
      Array.from({ length: end - start }, (_, i) => end - 1 - i),
      `page ${start + 1}–${end}`,
    );
    seen.push(...shown);
    end = start;
  }
  t.same(
    seen,
    Array.from({ length: total }, (_, i) => total - 1 - i),
    'all events once, newest to oldest',
  );
  t.ok(await older.isDisabled(), 'no page before the first');
  t.match(await page.locator('.timeline > li').last().textContent(), /run\.created/);
  await page.getByRole('button', { name: 'Newest events' }).first().click();
  await page.getByText(`Events #${total - 50}–#${total - 1} of ${total}, newest first (live)`).waitFor();
  const urls = requests.map((r) => r.url().slice(ui.origin.length));
  t.ok(
    urls.includes(`${runPath(LIVE_RUN)}?eventLimit=50&eventCursor=${total - 100}`),
    'older page requested by cursor',
  );
});

t.test('a run whose texts the view shortened says so, and each cut text says it was cut', async (t) => {
  const api = (await (await fetch(`${ui.origin}${runPath(LONG_TEXTS_RUN)}`)).json()) as {
    run: { textsShortened: number; nodes: { id: string; state: string; failureReason: string | null }[] };
  };
  const shortened = api.run.textsShortened;
  t.ok(shortened > 0, `the bridge shortened ${shortened} texts`);
  await page.goto(`${ui.origin}/#/runs/${LONG_TEXTS_RUN}`);
  const note = page.locator('[data-texts-shortened]');
  await note.waitFor();
  t.equal(await note.getAttribute('role'), 'note');
  t.match(await note.textContent(), new RegExp(`^${shortened} node or artifact texts shortened`));
  const reasons = await page.locator('.lane .reason').allTextContents();
  t.equal(reasons.length, NODE_IDS.length * 3, 'every reason is shown');
  t.equal(
    reasons.filter((r) => / \[\d+ more bytes not shown\]$/.test(r)).length,
    shortened,
    'each shortened text carries its marker',
  );
  // "Needs you" is read at a glance: a long reason shows its start, the whole text on demand.
  const failed = api.run.nodes.find((n) => n.state === 'failed')!;
  const reason = page.locator(`.needs-you [data-needs="failed"]`).first().locator('dd').first();
  const [visible, hidden] = await reason.evaluate((el) => {
    const all = el.textContent ?? '';
    const rest = el.querySelector('details')?.textContent ?? '';
    return [all.slice(0, all.length - rest.length), rest];
  });
  t.equal(visible, `${failed.failureReason!.slice(0, 240)}…`, 'the first 240 characters of the reason');
  t.equal(hidden, `Show all ${failed.failureReason!.length} characters${failed.failureReason}`);
  const details = reason.locator('details.long-text');
  t.equal(await details.evaluate((d) => d.hasAttribute('open')), false, 'the rest starts closed');
  await reason.locator('summary').click();
  t.equal(await details.evaluate((d) => d.hasAttribute('open')), true, 'and opens on demand');
  await page.goto(`${ui.origin}/#/runs/${LIVE_RUN}`);
  await page.locator('.lane').waitFor();
  t.equal(await page.locator('[data-texts-shortened]').count(), 0, 'a run whose texts fit shows no note');
  t.equal(await page.locator('.needs-you details.long-text').count(), 0, 'short reasons are shown whole');
});

t.test('quarantined runs get a plain banner with the bridge’s reasons', async (t) => {
  await page.goto(`${ui.origin}/#/runs/${DRIFTED_RUN}`);
  const banner = page.locator('.banner.quarantined');
  await banner.waitFor();
  t.match(
    await banner.textContent(),
    /This run is quarantined[\s\S]*artifact handoff\/final\.md changed after completion/,
  );
  t.equal(await banner.getAttribute('role'), 'alert');
  t.equal(await page.locator('.completion').count(), 0, 'a quarantined run shows no completion claim');
  t.equal(await page.locator('.lane').count(), 0, 'nor any state derived from its record');
  t.same(await facts(), { Status: 'quarantined', ...UNKNOWN_FACTS }, 'no placeholder shown as a fact');
  t.equal(await eventsLine.textContent(), QUARANTINED_EVENTS, 'never "No events recorded."');
  t.equal(await page.locator('.timeline, nav[aria-label^="Event pages"]').count(), 0);
  await page.goto(`${ui.origin}/#/runs/${TAMPERED_RUN}`);
  const tampered = page.locator('.banner.quarantined');
  await tampered.getByText(/events\.jsonl: /).waitFor();
  t.equal(await page.locator('.lane').count(), 0, 'an unauthenticated record shows no derived state');
  t.same(await facts(), { Status: 'quarantined', ...UNKNOWN_FACTS });
  t.equal(await eventsLine.textContent(), QUARANTINED_EVENTS);
  // A quarantined record says nothing derived from it in the list either, whichever check
  // quarantined it: its summary's zeros and quarantine time are placeholders, shown as unknown.
  await page.goto(`${ui.origin}/`);
  await page.locator('table.runs tbody tr').nth(4).waitFor();
  for (const id of [DRIFTED_RUN, TAMPERED_RUN])
    t.same(
      await page
        .locator(`tr[data-run-id="${id}"] td`)
        .evaluateAll((els) => els.map((e) => (e.textContent ?? '').trim())),
      ['quarantined', '—', '—', '—', '—', '—'],
      `${id} in the list`,
    );
});

t.test('a blueprint run shows the static topology, no progress', async (t) => {
  await page.goto(`${ui.origin}/#/runs/${BLUEPRINT_RUN}`);
  await page.locator('.lane.blueprint > li').nth(13).waitFor();
  t.equal(await page.locator('#flow-heading').textContent(), 'Flow: static topology');
  t.match(
    await page.locator('[data-mode-note="blueprint"]').textContent(),
    /static topology, not live progress/,
  );
  const nodes = await page
    .locator('.lane > li')
    .evaluateAll((els) => els.map((e) => [e.getAttribute('data-node-id'), (e.textContent ?? '').trim()]));
  t.same(
    nodes.map(([id]) => id),
    [...NODE_IDS],
  );
  for (const [id, text] of nodes) {
    const artifact = DEFAULT_ARTIFACT_BY_NODE[id as NodeId];
    t.match(text, artifact === undefined ? /no artifact$/ : `artifact ${artifact}`, `${id}: its artifact`);
    t.match(text, /required|optional/);
  }
  t.equal(
    await page.locator('.lane .node-state, .lane .node-trace, .lane [aria-current]').count(),
    0,
    'no state, time, events or current node',
  );
  t.equal(await page.locator('[data-mode-note="replay"]').count(), 0);
});

t.test('a completed run drifting on disk turns quarantined on screen', async (t) => {
  await page.goto(`${ui.origin}/#/runs/${COMPLETED_RUN}`);
  await page.getByText('Completed: the finish line accepted this run.').waitFor();
  t.equal(await page.locator('.banner.quarantined').count(), 0, 'not quarantined while nothing drifts');
  const known = await facts();
  t.match(known, { Status: 'completed', 'Current node': 'handoff', Commissioned: 'no' });
  t.match(known['Events'], /^\d+$/, 'the run’s own event count');
  t.not(known['Last update'], '—');
  t.same(
    await page.locator('.lane > li').evaluateAll((els) => els.map((e) => e.getAttribute('data-state'))),
    Array(14).fill('passed'),
  );
  await rm(join(te.dir, `artifacts-${COMPLETED_RUN}`, DEFAULT_ARTIFACT_BY_NODE.prove));
  // The next 2 s poll re-verifies the completed run and finds the artifact gone.
  const banner = page.locator('.banner.quarantined');
  await banner.waitFor({ timeout: 5000 });
  t.match(await banner.textContent(), /artifact proof\/proof\.json: /);
  await page.locator('.lane').waitFor({ state: 'detached' });
  t.same(await facts(), { Status: 'quarantined', ...UNKNOWN_FACTS }, 'its facts turn unknown');
  t.equal(await eventsLine.textContent(), QUARANTINED_EVENTS);
  t.equal(await page.getByText('Completed: the finish line accepted this run.').count(), 0);
});

t.test('polling runs every 2 s, pauses while hidden, and fits a narrow window', async (t) => {
  await page.goto(`${ui.origin}/#/runs/${LIVE_RUN}`);
  await page.locator('.lane').waitFor();
  const polls = () => requests.filter(isPoll(LIVE_RUN)).length;
  const loaded = polls();
  await page.waitForRequest(isPoll(LIVE_RUN), { timeout: 5000 });
  t.ok(polls() > loaded, 'polled again on its own while visible');
  await page.evaluate(setHidden(true));
  const before = polls();
  // An observation window longer than one poll interval: an absence cannot be awaited.
  await page.waitForTimeout(2600);
  t.equal(polls(), before, 'no requests while hidden');
  const back = page.waitForRequest(isPoll(LIVE_RUN), { timeout: 1000 });
  await page.evaluate(setHidden(false));
  await back;
  t.pass('polls at once when shown again');
});

/**
 * What is wider than the window at 420 px: the page itself, any element reaching past its right
 * edge, and any box that scrolls sideways inside it (a table in a scrolling wrapper fits the page
 * while its columns are off-screen).
 */
const NARROW_PROBE = `(() => {
  const w = document.documentElement.clientWidth;
  const wide = [...document.querySelectorAll('body *')].filter((e) => {
    const r = e.getBoundingClientRect();
    // A visually hidden text (1 px, clipped: a digest's whole value) widens nothing.
    if (r.width <= 1 || r.height <= 1) return false;
    return r.right > w + 0.5 || (getComputedStyle(e).overflowX !== 'visible' && e.scrollWidth > e.clientWidth + 1);
  });
  return { over: document.documentElement.scrollWidth - w, wide: wide.slice(0, 5).map((e) => e.tagName + '.' + e.className) };
})()`;

t.test('at 420 px nothing is wider than the window: tables are cards, digests shortened', async (t) => {
  await page.setViewportSize(NARROW);
  for (const path of ['/', `/#/runs/${LIVE_RUN}`]) {
    await page.goto(`${ui.origin}${path}`);
    await page
      .locator(path === '/' ? 'table.runs tbody tr' : 'table.artifacts tbody tr')
      .first()
      .waitFor();
    await page
      .locator(path === '/' ? '.status-counts' : '.timeline > li')
      .first()
      .waitFor();
    t.same(await page.evaluate(NARROW_PROBE), { over: 0, wide: [] }, `nothing overflows on ${path}`);
    t.same(await seriousAxeViolations(page), [], `no serious or critical accessibility violation on ${path}`);
    if (path !== '/') {
      // A node's events list opens inside the window, from either column of the lane.
      for (const id of ['code-intelligence', 'design-anchors']) {
        await page.locator(`.lane > li[data-node-id="${id}"]`).hover();
        t.same(await page.evaluate(NARROW_PROBE), { over: 0, wide: [] }, `${id}: its events list fits`);
      }
      await page.mouse.move(0, 0);
    }
    await page.screenshot({
      path: join(SHOTS, path === '/' ? 'runs-list-narrow.png' : 'run-view-narrow.png'),
      clip: { x: 0, y: 0, ...NARROW, height: 1400 },
      fullPage: true,
    });
    const table = path === '/' ? 'table.runs' : 'table.artifacts';
    t.equal(await page.locator(`${table} thead`).isVisible(), false, `${table}: no header row`);
    t.equal(
      await page.evaluate(`getComputedStyle(document.querySelector('${table} tbody tr')).display`),
      'block',
      `${table}: each row a card`,
    );
  }
  const digest = page.locator('table.artifacts .digest').first();
  const full = (await digest.getAttribute('data-digest')) ?? '';
  t.match(full, /^[0-9a-f]{64}$/);
  t.equal(await digest.locator('.digest-short').textContent(), `${full.slice(0, 10)}…${full.slice(-6)}`);
  t.ok(((await digest.boundingBox())?.width ?? 999) < 200, 'shortened on screen');
  await digest.focus();
  t.equal(await digest.locator('.digest-short').isVisible(), false, 'on focus the short form gives way');
  t.ok(((await digest.locator('.digest-full').boundingBox())?.width ?? 0) > 100, 'to the whole value');
  t.same(await page.evaluate(NARROW_PROBE), { over: 0, wide: [] }, 'which wraps within the window');
  // A copy of what is on screen carries the whole digest, never the shortened one.
  const copied = await page.evaluate(`(() => {
    const e = document.querySelector('table.artifacts .digest');
    const range = document.createRange();
    range.selectNodeContents(e.querySelector('.digest-short'));
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    const data = new DataTransfer();
    e.dispatchEvent(new ClipboardEvent('copy', { clipboardData: data, bubbles: true, cancelable: true }));
    return data.getData('text/plain');
  })()`);
  t.equal(copied, full);
  await page.setViewportSize(WIDE);
});

t.test('a lost bridge is shown plainly, with the data still on screen', async (t) => {
  await page.locator('.lane').waitFor();
  await bridge.close();
  const lost = page.locator('.banner.lost');
  await lost.waitFor({ timeout: 8000 });
  t.match(
    await lost.textContent(),
    /Bridge lost[\s\S]*bridge_unreachable[\s\S]*HTTP 502[\s\S]*Showing data from/,
  );
  t.equal(await page.locator('.lane > li').count(), 14, 'the last good data stays visible');
});

t.test('no response body or request the browser saw carries a credential', async (t) => {
  const seen = await Promise.all(bodies);
  t.ok(seen.length > 10, `${seen.length} responses recorded`);
  const runBodies = seen.filter((b) => b.url.includes(`${runPath(LIVE_RUN)}?`));
  t.ok(
    runBodies.some((b) => b.text.includes(PENDING.owner) && b.text.includes(DECIDED.scope)),
    'proxied run bodies with real data were recorded',
  );
  for (const [name, secret] of [
    ['access token', ACCESS],
    ['human token', HUMAN],
    ['integrity key', INTEGRITY],
  ] as const) {
    t.same(
      seen.filter((b) => b.text.includes(secret)).map((b) => b.url),
      [],
      `no body carries the ${name}`,
    );
    t.same(
      requests
        .filter((r) => JSON.stringify(r.headers()).includes(secret) || r.url().includes(secret))
        .map((r) => r.url()),
      [],
      `no request carries the ${name}`,
    );
  }
});
