import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import t from 'tap';
import { build } from 'vite';
import { loadUiConfig } from '../../src/ui/config.js';
import { ROOT } from './paths.js';
import { type RunningUi, startUi } from './ui-server.js';

/** Debian's chromium: the browser tests drive it through playwright-core, nothing downloaded. */
export const CHROMIUM = '/usr/bin/chromium';

/** Ends a browser test file at once, saying why, when the machine has no chromium. */
export function requireChromium(): void {
  if (existsSync(CHROMIUM)) return;
  t.plan(
    0,
    `${CHROMIUM} is absent: install Debian's chromium (apt-get install chromium) to run the browser test`,
  );
  process.exit(0);
}

/** The web app built fresh into `outDir`, so a test never reads a stale dist/ui. */
export async function buildWeb(outDir: string): Promise<void> {
  await build({
    configFile: join(ROOT, 'src/ui/web/vite.config.ts'),
    logLevel: 'warn',
    build: { outDir, emptyOutDir: true },
  });
}

/** The UI server as `harness ui` starts it, from an environment holding the access token only. */
export function startUiFor(bridgeUrl: string, accessToken: string, webRoot: string): Promise<RunningUi> {
  const config = loadUiConfig({
    HARNESS_BRIDGE_URL: bridgeUrl,
    HARNESS_BRIDGE_ACCESS_TOKEN: accessToken,
    HARNESS_BRIDGE_PROXY_TIMEOUT_MS: '1000',
  });
  return startUi(config.bridgeUrl, { webRoot, accessToken: config.accessToken, timeoutMs: config.timeoutMs });
}

/** One headless chromium with a throwaway profile, and its first page. */
export async function launchBrowser(profile: string): Promise<{ context: BrowserContext; page: Page }> {
  const context = await chromium.launchPersistentContext(profile, {
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
  return { context, page: context.pages()[0] ?? (await context.newPage()) };
}

/** axe-core's browser build, read from node_modules: nothing is downloaded at run time. */
const AXE_SOURCE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

/** An axe-core finding as the browser tests report it: the rule, its impact, and where. */
export interface AxeFinding {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

/**
 * The serious and critical accessibility violations axe-core finds on the page as it stands (WCAG
 * 2.x A and AA rules). The library is evaluated through the DevTools protocol, which the page's
 * CSP (script-src 'self') does not govern, so the page under test keeps its real policy.
 */
export async function seriousAxeViolations(page: Page): Promise<AxeFinding[]> {
  if (!(await page.evaluate('typeof window.axe === "object"')))
    await page.evaluate(await readFile(AXE_SOURCE, 'utf8'));
  const found = (await page.evaluate(`axe
    .run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } })
    .then((r) => r.violations.map((v) => ({
      id: v.id,
      impact: v.impact ?? null,
      help: v.help,
      targets: v.nodes.slice(0, 5).map((n) => n.target.join(' ')),
    })))`)) as AxeFinding[];
  return found.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/**
 * Once the run page's lane has read `n` events (awaited on its attribute: the page's CSP forbids
 * the eval waitForFunction polls with), the sum of its nodes' event counts.
 */
export async function laneEventsCounted(page: Page, n: number): Promise<number> {
  await page.locator(`.lane[data-events-read="${n}"]`).waitFor();
  const counts = await page
    .locator('.lane .node-trace')
    .evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-events'))));
  return counts.reduce((a, b) => a + b, 0);
}
