import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { cleanup, startTestBridge } from './helpers/bridge.js';
import { bridgeClientEnv } from './helpers/cli.js';
import { startRelayCli } from './helpers/relay.js';
import { launchBrowser, requireChromium } from './helpers/ui-browser.js';

/**
 * `harness browser-relay` in Chromium: a page served from an allowed origin posts with fetch (the
 * snippet of docs/sources.md) and the journal shows its event; a page of another origin cannot.
 */

requireChromium();

/** A page server on 127.0.0.1:0; each port is an origin of its own. */
async function pageServer(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>app under development</title><p>e2e</p>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The page's post: docs/sources.md's snippet, with the relay URL the command printed. */
function post({ RELAY, message }: { RELAY: string; message: string }): Promise<unknown> {
  return fetch(RELAY, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      type: 'gate.fired',
      actor: 'harness',
      nodeId: 'qa-break-it',
      status: 'ok',
      message,
    }),
  }).then(
    async (r) => ({ status: r.status, body: await r.json() }),
    (err: Error) => ({ refused: err.message }),
  );
}

t.test('a page of the allowed origin posts through the relay; another origin cannot', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const created = await b.req('POST', '/runs', { id: 'r-browser' });
  t.equal(created.status, 201);
  const allowed = await pageServer(t);
  const other = await pageServer(t);
  const relay = await startRelayCli(t, bridgeClientEnv(b), 'r-browser', [allowed]);
  const profile = await mkdtemp(join(tmpdir(), 'harness-relay-browser-'));
  const { context, page } = await launchBrowser(profile);
  t.teardown(async () => {
    await context.close();
    await rm(profile, { recursive: true, force: true });
  });

  await page.goto(`${allowed}/`);
  const answer = (await page.evaluate(post, { RELAY: relay.url, message: 'e2e: 42 passed' })) as {
    status: number;
    body: Record<string, unknown>;
  };
  t.equal(answer.status, 201, JSON.stringify(answer));
  const view = (await b.req('GET', '/runs/r-browser')).body['run'];
  t.match(view.events.at(-1), {
    id: answer.body['id'],
    message: 'e2e: 42 passed',
    runMode: 'live',
    eventSource: 'browser-local',
    actor: 'harness',
  });

  const before = await b.journal('r-browser');
  await page.goto(`${other}/`);
  const refused = (await page.evaluate(post, { RELAY: relay.url, message: 'from elsewhere' })) as {
    refused?: string;
  };
  t.ok(refused.refused, `the browser refuses the other origin's fetch: ${JSON.stringify(refused)}`);
  t.same(await b.journal('r-browser'), before, 'nothing was posted');
  t.equal(await relay.stop(), 0);
});
