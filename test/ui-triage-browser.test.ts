import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Download, Request } from 'playwright-core';
import t from 'tap';
import { DENY_PLACEHOLDERS, shellQuote } from '../src/contract/command-line.js';
import { ev, makeTestEnv, startTestBridge, type TestBridge } from './helpers/bridge.js';
import { CLI } from './helpers/paths.js';
import {
  buildWeb,
  laneEventsCounted,
  launchBrowser,
  requireChromium,
  startUiFor,
} from './helpers/ui-browser.js';

/**
 * Triage in headless chromium against the real bridge: what waits for a person comes first on the
 * runs list and on a run's page, and the commands shown there work as shown (the grant) or are
 * refused by the shell until their placeholders are filled (the deny).
 */
requireChromium();

const APPROVAL_RUN = 'triage-approval';
const FAILED_RUN = 'triage-failed';
const REFUSED_RUN = 'triage-refused';
const LONG_RUN = 'triage-long';
const OWNER = 'release-manager';
const SCOPE = "ship v2's API";
const FAILURE = 'terraform plan failed: provider pin drifted';
const RECOVERY = 'pin the provider and re-plan';
const QUIET_RUN = 'triage-quiet';
const REPLAY_RUN = 'triage-replay';
const LONG_EVENTS = 300;
/** The long run's one failure, the event the "jump to first failure" button must reach. */
const LONG_FAILURE_SEQ = 20;

const te = await makeTestEnv();
const ACCESS = te.env['HARNESS_BRIDGE_ACCESS_TOKEN'] as string;
const HUMAN = te.env['HARNESS_HUMAN_APPROVAL_TOKEN'] as string;
const bridge: TestBridge = await startTestBridge(te);

async function post(runId: string, body: Record<string, unknown>, expected = 201) {
  const r = await bridge.req('POST', `/runs/${runId}/events`, ev(body));
  if (r.status !== expected) throw new Error(`${runId} ${String(body['type'])}: ${JSON.stringify(r.body)}`);
}

// Creation order: the long run first, so the three that need a person are the newest.
await post(LONG_RUN, { type: 'run.created', message: 'long run created' });
for (let i = 1; i < LONG_EVENTS; i++)
  await post(
    LONG_RUN,
    i === LONG_FAILURE_SEQ
      ? {
          type: 'node.failed',
          nodeId: 'code-intelligence',
          status: 'failed',
          failureReason: 'graph too old',
          recoveryPath: 'rebuild the graph',
          message: 'graph check failed',
        }
      : { type: 'gate.fired', nodeId: i < 150 ? 'intake' : 'route', message: `check ${i}` },
  );
await post(QUIET_RUN, { message: 'entered intake' });
await post(FAILED_RUN, { message: 'entered intake' });
await post(FAILED_RUN, {
  type: 'node.failed',
  nodeId: 'cloud-platform',
  status: 'failed',
  failureReason: FAILURE,
  recoveryPath: RECOVERY,
  message: 'cloud platform check failed',
});
await post(REFUSED_RUN, { message: 'entered intake' });
await post(REFUSED_RUN, { type: 'run.completed', nodeId: 'handoff', status: 'passed' }, 409);
await post(APPROVAL_RUN, { message: 'entered intake' });
await post(APPROVAL_RUN, {
  type: 'approval.requested',
  nodeId: 'redzone',
  status: 'needs_approval',
  approvalOwner: OWNER,
  approvalScope: SCOPE,
  message: 'production deploy needs sign-off',
});
await post(REPLAY_RUN, { runMode: 'replay', eventSource: 'database', message: 'replaying intake' });
// The quiet run, second oldest, is the one last active: the runs list's default order says so.
await post(QUIET_RUN, { type: 'gate.fired', message: 'still here' });

const work = await mkdtemp(join(tmpdir(), 'harness-ui-triage-'));
await buildWeb(join(work, 'web'));
const ui = await startUiFor(bridge.url, ACCESS, join(work, 'web'));
const { context, page } = await launchBrowser(join(work, 'profile'));
t.teardown(async () => {
  await context.close();
  await ui.app.close();
  await bridge.close();
  await rm(work, { recursive: true, force: true });
  await rm(te.dir, { recursive: true, force: true });
});

const top = async (selector: string) => (await page.locator(selector).first().boundingBox())?.y ?? -1;

t.test('the runs list starts with what needs a person, in every run', async (t) => {
  await page.goto(`${ui.origin}/`);
  const band = page.locator('section.needs-you');
  await band.locator('[data-needs="refused"]').waitFor();
  await band.locator('[data-needs="failed"]', { hasText: FAILED_RUN }).waitFor();
  const approval = band.locator('[data-needs="approval"]');
  t.match(
    await approval.textContent(),
    new RegExp(
      `${APPROVAL_RUN}[\\s\\S]*Approval waiting[\\s\\S]*redzone[\\s\\S]*${OWNER}[\\s\\S]*ship v2's API`,
    ),
  );
  t.match(await approval.locator('time').textContent(), /s ago|min ago/, 'the request’s age');
  t.same(await approval.locator('.grant-command').allTextContents(), [
    `harness approve ${APPROVAL_RUN} --owner ${OWNER} --scope ${shellQuote(SCOPE)} --grant`,
  ]);
  const failed = await band.locator('[data-needs="failed"]', { hasText: FAILED_RUN }).textContent();
  t.match(failed, new RegExp(`${FAILED_RUN}[\\s\\S]*Node failed[\\s\\S]*cloud-platform`));
  t.match(failed, FAILURE);
  t.match(failed, RECOVERY);
  const refused = band.locator('[data-needs="refused"]');
  t.match(
    await refused.textContent(),
    new RegExp(`${REFUSED_RUN}[\\s\\S]*Completion refused: \\d+ problems`),
  );
  t.equal(await refused.locator('ul > li').count(), 3, 'the first three problems');
  t.ok((await top('section.needs-you')) < (await top('table.runs')), 'above the runs table');
  t.ok((await top('[data-needs="approval"]')) < 900, 'on the first screen');
  t.equal(
    await band.locator(`a[href="#/runs/${QUIET_RUN}"]`).count(),
    0,
    'a run needing nothing is not listed',
  );
});

const rowIds = () =>
  page.locator('table.runs tbody tr').evaluateAll((els) => els.map((e) => e.getAttribute('data-run-id')));
/** Waits for the list to show `ids`: a changed view is a new hash, then a new render. */
async function rowsBecome(ids: string[]) {
  for (let i = 0; i < 50 && JSON.stringify(await rowIds()) !== JSON.stringify(ids); i++)
    await page.waitForTimeout(100);
  return rowIds();
}

t.test('the runs list: newest activity first, a sort switch, filters in the URL, counts', async (t) => {
  await page.goto(`${ui.origin}/`);
  await page.locator('table.runs tbody tr').nth(5).waitFor();
  t.same(
    await rowIds(),
    [QUIET_RUN, REPLAY_RUN, APPROVAL_RUN, REFUSED_RUN, FAILED_RUN, LONG_RUN],
    'by last update: the quiet run moved last, though created second',
  );
  t.match(await page.locator('table.runs caption').textContent(), 'Runs 1–6 of 6, newest activity first');
  t.equal(await page.locator('.sort-switch [aria-current="true"]').textContent(), 'Last update');
  await page.locator('.sort-switch').getByRole('link', { name: 'Created' }).click();
  t.same(await rowsBecome([REPLAY_RUN, APPROVAL_RUN, REFUSED_RUN, FAILED_RUN, QUIET_RUN, LONG_RUN]), [
    REPLAY_RUN,
    APPROVAL_RUN,
    REFUSED_RUN,
    FAILED_RUN,
    QUIET_RUN,
    LONG_RUN,
  ]);
  t.equal(page.url(), `${ui.origin}/#/?sort=created`);
  // The counts are the bridge's statuses, every status named.
  const listed = (await bridge.req('GET', '/runs?limit=50')).body['runs'] as { status: string }[];
  const expected = ['running', 'blocked', 'completed', 'quarantined'].map(
    (s) => `${s.replace('_', ' ')} ${listed.filter((r) => r.status === s).length}`,
  );
  t.same(
    (await page.locator('.status-counts li').allTextContents()).map((x) => x.replace(/\s+/g, ' ').trim()),
    expected,
  );
  await page.locator('select[name="status"]').selectOption('blocked');
  t.same(await rowsBecome([REFUSED_RUN]), [REFUSED_RUN]);
  t.equal(page.url(), `${ui.origin}/#/?sort=created&status=blocked`);
  await page.goto(`${ui.origin}/#/?mode=replay`);
  t.same(await rowsBecome([REPLAY_RUN]), [REPLAY_RUN], 'a link reproduces the view');
  t.equal(await page.locator('select[name="mode"]').inputValue(), 'replay', 'and its controls');
  await page.goto(`${ui.origin}/#/`);
  await page.locator('input[name="pending"]').check();
  t.same(await rowsBecome([APPROVAL_RUN]), [APPROVAL_RUN]);
  t.equal(page.url(), `${ui.origin}/#/?pending=1`);
  await page.locator('select[name="quarantined"]').selectOption('only');
  await page.getByText('No run matches these filters.').waitFor();
  t.equal(page.url(), `${ui.origin}/#/?pending=1&quarantined=only`);
  await page.getByRole('link', { name: 'Clear the filters' }).click();
  t.equal(
    (await rowsBecome([QUIET_RUN, REPLAY_RUN, APPROVAL_RUN, REFUSED_RUN, FAILED_RUN, LONG_RUN])).length,
    6,
  );
});

t.test('any run opens by its ID from the list, also one its filters hide', async (t) => {
  await page.goto(`${ui.origin}/#/?mode=replay`);
  t.same(await rowsBecome([REPLAY_RUN]), [REPLAY_RUN], 'the failed run is not listed');
  await page.getByLabel('Run ID').fill(`  ${FAILED_RUN} `);
  await page.getByRole('button', { name: 'Open run' }).click();
  await page.waitForURL(`${ui.origin}/#/runs/${FAILED_RUN}`);
  t.match(await page.locator('#run-heading').textContent(), `Run ${FAILED_RUN}`);
  await page.locator('section.needs-you', { hasText: FAILURE }).waitFor();
  await page.goto(`${ui.origin}/`);
  await page.getByRole('button', { name: 'Open run' }).click();
  t.equal(page.url(), `${ui.origin}/`, 'an empty ID opens nothing');
});

t.test('a replay run says so in its header, naming its source; a live run does not', async (t) => {
  await page.goto(`${ui.origin}/#/runs/${REPLAY_RUN}`);
  const note = page.locator('[data-mode-note="replay"]');
  await note.waitFor();
  t.equal(
    (await note.textContent())?.replace(/\s+/g, ' '),
    "Replay: this run's events were replayed from database, not recorded live.",
  );
  t.ok((await top('[data-mode-note]')) < (await top('dl.facts')), 'in the header, above the facts');
  await page.goto(`${ui.origin}/#/runs/${FAILED_RUN}`);
  await page.locator('.lane').waitFor();
  t.equal(await page.locator('[data-mode-note]').count(), 0);
});

t.test('a run’s page opens on its decisions, above its facts and completion', async (t) => {
  await page.goto(`${ui.origin}/#/runs/${APPROVAL_RUN}`);
  const banner = page.locator('section.needs-you');
  await banner.waitFor();
  t.ok((await top('section.needs-you')) < (await top('dl.facts')), 'above the facts');
  t.ok((await top('section.needs-you')) < (await top('section.completion')), 'above the completion list');
  t.equal(await banner.locator('a').count(), 0, 'names no run: it is this one');
  t.match(await banner.textContent(), /Approval waiting at node redzone/);
  await page.goto(`${ui.origin}/#/runs/${FAILED_RUN}`);
  await page.locator('section.needs-you [data-needs="failed"]').waitFor();
  t.match(await page.locator('section.needs-you').textContent(), `${FAILURE}`);
  await page.goto(`${ui.origin}/#/runs/${QUIET_RUN}`);
  await page.locator('dl.facts').waitFor();
  t.equal(await page.locator('section.needs-you').count(), 0, 'nothing waits: no banner');
});

/** The command lines as a shell on this machine runs them, with a `harness` that is this build. */
async function shellRun(command: string, env: Record<string, string>) {
  const bin = join(work, 'bin');
  await mkdir(bin, { recursive: true });
  await writeFile(join(bin, 'harness'), `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`);
  await chmod(join(bin, 'harness'), 0o755);
  // POSIX sh (dash on Debian): the shell the placeholders must stop, and one that reads no rc file.
  return promisify(execFile)('/bin/sh', ['-c', command], {
    env: { PATH: `${bin}:/usr/bin:/bin`, HOME: work, HARNESS_BRIDGE_URL: bridge.url, ...env },
  }).then(
    (r) => ({ code: 0, stderr: r.stderr }),
    (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
  );
}

t.test('the deny command is refused by the shell until its reasons are filled in', async (t) => {
  await page.goto(`${ui.origin}/#/runs/${APPROVAL_RUN}`);
  const deny = (await page.locator('section.needs-you .deny-command').textContent()) ?? '';
  t.equal(
    deny,
    `harness approve ${APPROVAL_RUN} --owner ${OWNER} --scope ${shellQuote(SCOPE)} --deny --failure-reason ${DENY_PLACEHOLDERS.failureReason} --recovery-path ${DENY_PLACEHOLDERS.recoveryPath}`,
  );
  const env = { HARNESS_BRIDGE_ACCESS_TOKEN: ACCESS, HARNESS_HUMAN_APPROVAL_TOKEN: HUMAN };
  const before = await bridge.journal(APPROVAL_RUN);
  const asShown = await shellRun(`${deny} --yes`, env);
  t.equal(asShown.code, 2, 'a syntax error: nothing runs');
  t.match(asShown.stderr, /syntax error/i);
  t.same(await bridge.journal(APPROVAL_RUN), before, 'nothing stored');
  const filled = deny
    .replace(DENY_PLACEHOLDERS.failureReason, shellQuote('not before the freeze ends'))
    .replace(DENY_PLACEHOLDERS.recoveryPath, shellQuote('request again on Monday'));
  const sent = await shellRun(`${filled} --yes`, env);
  t.equal(sent.code, 0, sent.stderr);
  const view = await bridge.req('GET', `/runs/${APPROVAL_RUN}`);
  const node = view.body['run'].nodes.find((n: { id: string }) => n.id === 'redzone');
  t.match(node, {
    state: 'failed',
    failureReason: 'not before the freeze ends',
    recoveryPath: 'request again on Monday',
  });
  // The page follows: the approval leaves "Needs you" and the failed node takes its place.
  await page.locator('section.needs-you [data-needs="failed"]').waitFor({ timeout: 5000 });
  t.equal(await page.locator('section.needs-you [data-needs="approval"]').count(), 0);
});

const caption = page.locator('#events-heading + p');
const seqs = () =>
  page.locator('.timeline > li').evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-seq'))));

t.test('events: the caption numbers its items as they are numbered, with times and gaps', async (t) => {
  await page.goto(`${ui.origin}/#/runs/${LONG_RUN}`);
  await caption.getByText('Events #250–#299 of 300, newest first (live)').waitFor();
  const shown = await seqs();
  t.same(
    shown,
    Array.from({ length: 50 }, (_, i) => 299 - i),
  );
  const labels = await page.locator('.timeline > li .seq').allTextContents();
  t.same([labels[0], labels.at(-1)], ['#299', '#250'], 'the items carry the caption’s numbers');
  t.match(await page.locator('.timeline > li time').first().textContent(), /ago$/, 'a relative time');
  t.ok(await page.locator('.timeline > li time').first().getAttribute('title'), 'the full time on hover');
  const gaps = await page.locator('.timeline > li .gap').allTextContents();
  t.equal(gaps.length, 49, 'each event but the page’s oldest: the time since the one before');
  t.ok(
    gaps.every((g) => /^\+\d+(\.\d)? (ms|s)$|^\+\d+ (min|h) /.test(g)),
    gaps.slice(0, 3).join(', '),
  );
  t.same(
    await page
      .locator('nav[aria-label^="Event pages"]')
      .evaluateAll((els) => els.map((e) => e.getAttribute('aria-label'))),
    ['Event pages, top', 'Event pages, bottom'],
    'a pager above and one below',
  );
});

t.test('events: the jump to the first failure loads its page and focuses it', async (t) => {
  await page.getByRole('button', { name: `Jump to first failure (#${LONG_FAILURE_SEQ})` }).click();
  const failure = page.locator(`.timeline > li[data-seq="${LONG_FAILURE_SEQ}"]`);
  await failure.waitFor();
  // The page's CSP forbids eval, so the focus is polled from outside rather than by waitForFunction.
  const focused = () => page.evaluate(`document.activeElement?.getAttribute('data-seq') ?? null`);
  for (let i = 0; i < 50 && (await focused()) !== String(LONG_FAILURE_SEQ); i++)
    await page.waitForTimeout(100);
  t.equal(await focused(), String(LONG_FAILURE_SEQ), 'the failure has the focus');
  t.match(await failure.textContent(), /node\.failed[\s\S]*code-intelligence[\s\S]*graph too old/);
  t.ok(await failure.isVisible(), 'scrolled into view');
  t.match(await caption.textContent(), `Events #${LONG_FAILURE_SEQ}–#${LONG_FAILURE_SEQ + 49} of 300`);
});

t.test('events: filters by type, node and status keep only what matches', async (t) => {
  // The page the jump opened: #20 (the failure, code-intelligence) among intake's gate events.
  await page.locator('select[name="node"]').selectOption('code-intelligence');
  t.same(await seqs(), [LONG_FAILURE_SEQ]);
  t.match(await page.locator('[data-filter-note]').textContent(), /^1 of this page's 50 events match/);
  await page.locator('select[name="node"]').selectOption('');
  await page.locator('select[name="status"]').selectOption('failed');
  t.same(await seqs(), [LONG_FAILURE_SEQ]);
  await page.locator('select[name="status"]').selectOption('');
  await page.locator('select[name="type"]').selectOption('gate.fired');
  t.equal(await page.locator('.timeline > li').count(), 49);
  await page.locator('select[name="type"]').selectOption('');
  t.equal(await page.locator('.timeline > li').count(), 50, 'all again');
  t.equal(await page.locator('[data-filter-note]').count(), 0);
});

t.test('events: an older page replaces the shown one without blanking or moving the scroll', async (t) => {
  await page.getByRole('button', { name: 'Newest events' }).first().click();
  await caption.getByText('Events #250–#299 of 300, newest first (live)').waitFor();
  // A slow bridge: the next page takes 600 ms, during which the shown page must stay.
  await page.route(/eventCursor=200/, async (route) => {
    await new Promise((r) => setTimeout(r, 600));
    await route.continue();
  });
  await page.evaluate(`window.__emptied = 0;
    new MutationObserver(() => {
      if (document.querySelectorAll('.timeline > li').length === 0) window.__emptied++;
    }).observe(document.querySelector('main'), { childList: true, subtree: true });`);
  const bottom = page.getByRole('button', { name: 'Older events' }).last();
  await bottom.scrollIntoViewIfNeeded();
  const before = (await page.evaluate('window.scrollY')) as number;
  t.ok(before > 500, `scrolled down to the bottom pager (${before} px)`);
  await bottom.click();
  await caption.getByText('Events #200–#249 of 300, newest first (older page)').waitFor();
  t.equal(await page.evaluate('window.__emptied'), 0, 'the list never emptied while the page loaded');
  const after = (await page.evaluate('window.scrollY')) as number;
  t.ok(Math.abs(after - before) < 100, `the scroll position held (${before} px, then ${after} px)`);
  t.same((await seqs()).slice(0, 2), [249, 248]);
  await page.unroute(/eventCursor=200/);
});

t.test('export: the run’s events as JSONL and its view as JSON, read through the proxy', async (t) => {
  await page.goto(`${ui.origin}/#/runs/${LONG_RUN}`);
  const downloads: Download[] = [];
  const requests: string[] = [];
  const onDownload = (d: Download) => downloads.push(d);
  const onRequest = (r: Request) => requests.push(`${r.method()} ${new URL(r.url()).pathname}`);
  page.on('download', onDownload);
  const button = page.getByRole('button', { name: 'Export events (JSONL) and view (JSON)' });
  await button.waitFor();
  page.on('request', onRequest);
  await button.click();
  await page.locator('[data-export-state]').getByText("Exported 300 events and the run's view.").waitFor();
  for (let i = 0; i < 50 && downloads.length < 2; i++) await page.waitForTimeout(100);
  page.off('download', onDownload);
  page.off('request', onRequest);
  const files = new Map(
    await Promise.all(
      downloads.map(
        async (d) => [d.suggestedFilename(), await readFile((await d.path()) as string, 'utf8')] as const,
      ),
    ),
  );
  t.same([...files.keys()].sort(), [`${LONG_RUN}.events.jsonl`, `${LONG_RUN}.view.json`]);
  // The bridge's own pages, read with the access token: the export must hold the same events.
  const fromBridge: unknown[] = [];
  for (let cursor = 0; cursor < LONG_EVENTS; cursor += 200)
    fromBridge.push(
      ...(await bridge.req('GET', `/runs/${LONG_RUN}?eventLimit=200&eventCursor=${cursor}`)).body['run']
        .events,
    );
  const lines = (files.get(`${LONG_RUN}.events.jsonl`) ?? '').split('\n');
  t.equal(lines.pop(), '', 'each line ends in a newline');
  t.equal(lines.length, LONG_EVENTS);
  t.same(
    lines.map((l) => JSON.parse(l)),
    fromBridge,
  );
  t.same(
    lines.map((l) => JSON.parse(l).seq),
    Array.from({ length: LONG_EVENTS }, (_, i) => i),
    'oldest first',
  );
  t.same(
    JSON.parse(files.get(`${LONG_RUN}.view.json`) ?? 'null'),
    (await bridge.req('GET', `/runs/${LONG_RUN}`)).body,
    'the view as the bridge answers it',
  );
  const api = requests.filter((r) => r.includes('/api/'));
  t.ok(api.length >= 3, api.join(', '));
  t.ok(
    api.every((r) => r.startsWith(`GET /api/bridge/runs/${LONG_RUN}`)),
    'reads of this run through the read-only proxy, nothing else',
  );
});

t.test('the lane reads a long run’s events page by page, then only the new ones', async (t) => {
  const reads: URLSearchParams[] = [];
  const onRequest = (r: Request) => {
    const url = new URL(r.url());
    if (url.pathname === `/api/bridge/runs/${LONG_RUN}` && url.searchParams.has('eventCursor'))
      reads.push(url.searchParams);
  };
  await page.goto(`${ui.origin}/#/`);
  page.on('request', onRequest);
  await page.goto(`${ui.origin}/#/runs/${LONG_RUN}`);
  const counted = async (n: number) =>
    t.equal(await laneEventsCounted(page, n), n, `${n} events read, each counted at its node`);
  const events = (id: string) =>
    page.locator(`.lane > li[data-node-id="${id}"] .node-trace`).getAttribute('data-events');
  await counted(LONG_EVENTS);
  // The seed: run.created and events 1..149 at intake but the failure (code-intelligence), then route.
  t.same(
    [await events('intake'), await events('code-intelligence'), await events('route')],
    ['149', '1', '150'],
  );
  t.same(
    reads.map((q) => [q.get('eventCursor'), q.get('eventLimit')]),
    [
      ['0', '200'],
      ['200', '200'],
    ],
    'two pages of 200 from the first event',
  );
  await post(LONG_RUN, { type: 'gate.fired', nodeId: 'route', message: 'one more' });
  await counted(LONG_EVENTS + 1);
  t.equal(await events('route'), '151');
  t.same(reads.at(-1)?.get('eventCursor'), String(LONG_EVENTS), 'then only the events past those read');
  page.off('request', onRequest);
});
