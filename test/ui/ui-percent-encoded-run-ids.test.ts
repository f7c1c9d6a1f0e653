import t from 'tap';
import { json, startRecordingUpstream } from '../helpers/recording-upstream.js';
import { startUi } from '../helpers/ui-server.js';

/**
 * SPEC Run ("never mapped onto another ID"), at the UI proxy: the router percent-decodes the
 * path, so `/api/bridge/runs/%70` would be forwarded as `/runs/p`. The proxy judges the run ID
 * segment as the browser sent it and forwards only the canonical spelling.
 */
const upstream = await startRecordingUpstream(json(200, { ok: true, run: {} }));
const ui = await startUi(upstream.url);
t.teardown(async () => {
  await ui.app.close();
  await upstream.close();
});

t.test('a percent-encoded run ID never reaches the bridge', async (t) => {
  for (const path of [
    '/api/bridge/runs/%70',
    '/api/bridge/runs/run%2D1',
    '/api/bridge/runs/run%2d1?eventLimit=5',
    '/api/bridge/runs/%72%75%6E%2D%31',
    '/%61pi/bridge/runs/%70',
  ]) {
    const before = upstream.received.length;
    const res = await ui.get(path);
    t.equal(res.status, 400, path);
    t.equal(res.json()['error'], 'invalid_run_id', path);
    t.equal(upstream.received.length, before, `${path}: nothing reached the bridge`);
  }
});

t.test('the canonical spelling is forwarded as it is', async (t) => {
  for (const path of ['/api/bridge/runs/run-1', '/%61pi/bridge/runs/run-1']) {
    const res = await ui.get(path);
    t.equal(res.status, 200, path);
    t.equal(upstream.received.at(-1)?.url, '/runs/run-1', path);
  }
});
