import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { json, startRecordingUpstream } from '../helpers/recording-upstream.js';
import { startUi } from '../helpers/ui-server.js';

/**
 * CONTRACT 8, "Cross-site requests: 403": the router percent-decodes the path, so /%61pi/bridge/runs
 * reaches the proxy route exactly as /api/bridge/runs does. The cross-site rule and the API's
 * `cache-control: no-store` key on the route the router matched; a cross-site navigation is let
 * through only to the app's pages by their plain spelling.
 */
const root = await mkdtemp(join(tmpdir(), 'harness-ui-encoded-'));
await mkdir(join(root, 'assets'), { recursive: true });
await writeFile(join(root, 'index.html'), '<!doctype html><title>t</title>');
await writeFile(join(root, 'assets', 'app-abc123.js'), 'console.log(1)');
const upstream = await startRecordingUpstream(json(200, { ok: true, runs: [] }));
const ui = await startUi(upstream.url, { webRoot: root });
t.teardown(async () => {
  await ui.app.close();
  await upstream.close();
  await rm(root, { recursive: true, force: true });
});

const navigation = { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' };
const crossSiteFetch = { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'cors' };

const SPELLINGS = [
  '/api/bridge/runs',
  '/%61pi/bridge/runs',
  '/%61%70%69/bridge/runs',
  '/api/bridge/run%73',
  '/api/bridge/runs/run-1',
  '/api/bridge/runs/run%2D1',
  '/api%2Fbridge/runs',
  '/api/bridge%2Fruns',
  '/api/bridge/runs%2Frun-1',
  '/%2Fapi/bridge/runs',
  '/%2fapi/bridge/runs',
  '//api/bridge/runs',
  '/api//bridge/runs',
  '/./api/bridge/runs',
  '/%2e/api/bridge/runs',
  '/%61pi/bridge/health',
  '/%2E%2E/index.html',
];

t.test('every spelling of the API is refused cross-site, navigation or not', async (t) => {
  for (const path of SPELLINGS) {
    const variants: Record<string, string>[] = [
      navigation,
      crossSiteFetch,
      { 'sec-fetch-site': 'same-site' },
    ];
    for (const headers of variants) {
      const before = upstream.received.length;
      const res = await ui.get(path, headers);
      t.equal(res.status, 403, `${path} ${headers['sec-fetch-mode'] ?? headers['sec-fetch-site']}`);
      t.equal(res.json()['error'], 'origin_not_allowed');
      t.equal(upstream.received.length, before, 'nothing reached the bridge');
    }
  }
});

t.test('an encoded spelling the router routes to the proxy is no-store', async (t) => {
  for (const path of ['/api/bridge/runs', '/%61pi/bridge/runs', '/api/bridge/run%73']) {
    const res = await ui.get(path, { 'sec-fetch-site': 'same-origin' });
    t.equal(res.status, 200, path);
    t.equal(res.headers['cache-control'], 'no-store', path);
  }
});

t.test('same-site API fetches and cross-site navigation to the app still work', async (t) => {
  const before = upstream.received.length;
  for (const headers of [{ 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'cors' }, {}]) {
    const res = await ui.get('/api/bridge/runs', headers);
    t.equal(res.status, 200);
    t.equal(res.headers['cache-control'], 'no-store');
  }
  t.equal(upstream.received.length, before + 2, 'both reached the bridge');
  for (const path of ['/', '/?run=run-1', '/index.html']) {
    const page = await ui.get(path, navigation);
    t.equal(page.status, 200, path);
    t.equal(page.headers['cache-control'], 'no-cache', path);
  }
  t.equal((await ui.get('/nope', navigation)).status, 404, 'a missing page is still a 404');
  t.equal((await ui.get('/assets/app-abc123.js', crossSiteFetch)).status, 403, 'no cross-site embedding');
});
