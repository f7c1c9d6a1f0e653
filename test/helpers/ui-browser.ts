import { existsSync } from 'node:fs';
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
