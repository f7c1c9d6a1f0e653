import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import t from 'tap';
import { build } from 'vite';
import {
  BROKEN_RUN,
  type FakeBridge,
  LIVE_RUN,
  QUARANTINED_RUN,
  startFakeBridge,
} from './helpers/fake-bridge.js';
import { ACCESS_TOKEN, type RunningUi, startUi } from './helpers/ui-server.js';

const CHROMIUM = '/usr/bin/chromium';
const SHOTS = new URL('../docs/screenshots/', import.meta.url).pathname;

if (!existsSync(CHROMIUM)) {
  t.plan(
    0,
    `${CHROMIUM} is absent: install Debian's chromium (apt-get install chromium) to run the browser test`,
  );
  process.exit(0);
}

// The web app is built fresh into a temp dir so the test never reads a stale dist/ui.
const work = await mkdtemp(join(tmpdir(), 'harness-ui-browser-'));
const webRoot = join(work, 'web');
await build({
  configFile: new URL('../src/ui/web/vite.config.ts', import.meta.url).pathname,
  logLevel: 'warn',
  build: { outDir: webRoot, emptyOutDir: true },
});

// Swap point for the real bridge: anything with `url`, `received` and `close()` serving the runs below.
const bridge: FakeBridge = await startFakeBridge(ACCESS_TOKEN);
const ui: RunningUi = await startUi(bridge.url, { webRoot, timeoutMs: 1000 });
const context: BrowserContext = await chromium.launchPersistentContext(join(work, 'profile'), {
  executablePath: CHROMIUM,
  headless: true,
  viewport: { width: 1280, height: 900 },
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
});
t.teardown(async () => {
  await context.close();
  await ui.app.close();
  await bridge.close();
  await rm(work, { recursive: true, force: true });
});

/** Every response body the browser receives, checked at the end for the access token. */
const bodies: Promise<{ url: string; text: string }>[] = [];
const requestHeaders: string[] = [];
const page: Page = context.pages()[0] ?? (await context.newPage());
page.on('response', (res) => {
  bodies.push(
    res.body().then(
      (b) => ({ url: res.url(), text: b.toString('latin1') }),
      () => ({ url: res.url(), text: '' }),
    ),
  );
});
page.on('request', (req) => requestHeaders.push(JSON.stringify(req.headers())));

/** Page-side code as strings: the test program has no DOM types, the page has no test code. */
const setHidden = (hidden: boolean) =>
  `Object.defineProperty(document, 'hidden', { configurable: true, get: () => ${hidden} });
   document.dispatchEvent(new Event('visibilitychange'));`;
const eventsLine = () => page.locator('#events-heading + p').textContent();
const seqs = () =>
  page.locator('.timeline > li').evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-seq'))));

t.test(
  'the runs list shows every run with its status, mode, node, events, approvals and update',
  async (t) => {
    await page.goto(`${ui.origin}/`);
    await page.locator('table.runs tbody tr').nth(2).waitFor();
    const rows = page.locator('table.runs tbody tr');
    t.equal(await rows.count(), 3);
    const live = page.locator(`tr[data-run-id="${LIVE_RUN}"]`);
    t.match(await live.textContent(), /running[\s\S]*live[\s\S]*redzone[\s\S]*120\+[\s\S]*1[\s\S]*ago/);
    t.match(await page.locator(`tr[data-run-id="${QUARANTINED_RUN}"]`).textContent(), /quarantined/);
    t.match(await page.getByRole('status').textContent(), /Connected/);
    await page.screenshot({ path: join(SHOTS, 'runs-list.png') });
  },
);

t.test(
  'a run opens from the keyboard and shows the 14-node lane with states and required flags',
  async (t) => {
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
    t.equal(lane.length, 14);
    t.same(lane[0], ['intake', 'passed', 'req']);
    t.same(lane[3], ['design-anchors', 'skipped', 'req']);
    t.same(lane[6], ['cloud-platform', 'failed', 'opt']);
    t.same(lane[8], ['redzone', 'needs_approval', 'req']);
    t.same(lane[13], ['handoff', 'pending', 'req']);
    t.equal(await page.locator('.lane > li[aria-current="step"]').getAttribute('data-node-id'), 'redzone');
    t.match(await page.locator('.lane').textContent(), /needs approval/);
    t.match(
      await page.locator('.completion').textContent(),
      /Cannot complete yet[\s\S]*approval pending: redzone/,
    );
    t.match(await page.locator('table.artifacts').textContent(), /art\/intake\.json[\s\S]*[0-9a-f]{64}/);
  },
);

t.test('the pending approval shows owner, scope and the exact approve command', async (t) => {
  const pending = page.locator('[data-approval-status="pending"]');
  t.match(await pending.textContent(), /redzone[\s\S]*security-lead[\s\S]*deploy to prod's cluster/);
  t.equal(
    await pending.locator('.approve-command').first().textContent(),
    `harness approve ${LIVE_RUN} --owner security-lead --scope 'deploy to prod'\\''s cluster' --grant`,
  );
  t.match(await page.locator('table.decided').textContent(), /tech-lead[\s\S]*granted/);
  await page.screenshot({ path: join(SHOTS, 'run-view.png') });
});

t.test('events page newest first, older pages on demand, back to newest', async (t) => {
  t.match(await eventsLine(), /Events 71–120 of 120, newest first \(live\)/);
  t.same((await seqs()).slice(0, 2), [119, 118]);
  await page.getByRole('button', { name: 'Older events' }).click();
  await page.getByText('Events 21–70 of 120').waitFor();
  t.same((await seqs()).slice(0, 1), [69]);
  await page.getByRole('button', { name: 'Older events' }).click();
  await page.getByText('Events 1–20 of 120').waitFor();
  t.equal((await seqs()).length, 20);
  t.ok(await page.getByRole('button', { name: 'Older events' }).isDisabled(), 'no page before the first');
  await page.getByRole('button', { name: 'Newest events' }).click();
  await page.getByText('Events 71–120 of 120, newest first (live)').waitFor();
  const urls = bridge.received.map((r) => r.url);
  t.ok(urls.includes(`/runs/${LIVE_RUN}?eventLimit=50&eventCursor=20`), 'older page requested by cursor');
  t.ok(
    urls.includes(`/runs/${LIVE_RUN}?eventLimit=20&eventCursor=0`),
    'first page sized to end where the next begins',
  );
});

t.test('quarantined runs get a plain banner with the reasons', async (t) => {
  await page.goto(`${ui.origin}/#/runs/${QUARANTINED_RUN}`);
  const banner = page.locator('.banner.quarantined');
  await banner.waitFor();
  t.match(
    await banner.textContent(),
    /This run is quarantined[\s\S]*proof\/proof\.json changed after completion/,
  );
  t.equal(await banner.getAttribute('role'), 'alert');
  await page.goto(`${ui.origin}/#/runs/${BROKEN_RUN}`);
  await page.getByText('journal MAC mismatch at seq 4').waitFor();
  t.equal(await page.locator('.lane').count(), 0, 'an unauthenticated record shows no derived state');
});

t.test('polling runs every 2 s, pauses while hidden, and fits a narrow window', async (t) => {
  await page.goto(`${ui.origin}/#/runs/${LIVE_RUN}`);
  await page.locator('.lane').waitFor();
  const count = () => bridge.received.filter((r) => r.url.startsWith(`/runs/${LIVE_RUN}`)).length;
  let before = count();
  await page.waitForTimeout(4500);
  t.ok(count() - before >= 2, 'polled while visible');
  await page.evaluate(setHidden(true));
  await page.waitForTimeout(300);
  before = count();
  await page.waitForTimeout(4500);
  t.equal(count(), before, 'no requests while hidden');
  await page.evaluate(setHidden(false));
  await page.waitForTimeout(500);
  t.ok(count() > before, 'polls again when visible');
  await page.setViewportSize({ width: 420, height: 900 });
  for (const path of ['/', `/#/runs/${LIVE_RUN}`]) {
    await page.goto(`${ui.origin}${path}`);
    await page.locator(path === '/' ? 'table.runs' : '.lane').waitFor();
    const overflow = await page.evaluate('document.documentElement.scrollWidth - window.innerWidth');
    t.equal(overflow, 0, `no sideways scroll at 420 px on ${path}`);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
});

t.test('a lost bridge is shown plainly', async (t) => {
  await bridge.close();
  const lost = page.locator('.banner.lost');
  await lost.waitFor({ timeout: 8000 });
  t.match(await lost.textContent(), /Bridge lost[\s\S]*bridge_unreachable[\s\S]*HTTP 502/);
});

t.test('no response body or request the browser saw carries the access token', async (t) => {
  const seen = await Promise.all(bodies);
  t.ok(seen.length > 10, `${seen.length} responses recorded`);
  t.ok(
    seen.some((b) => b.url.includes('/api/bridge/runs/')),
    'proxied run bodies were recorded',
  );
  t.same(
    seen.filter((b) => b.text.includes(ACCESS_TOKEN)).map((b) => b.url),
    [],
  );
  t.same(
    requestHeaders.filter((h) => h.includes(ACCESS_TOKEN)),
    [],
  );
});
