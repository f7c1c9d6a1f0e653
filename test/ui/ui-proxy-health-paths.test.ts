import t from 'tap';
import { cleanup, startTestBridge } from '../helpers/bridge.js';
import { startUi } from '../helpers/ui-server.js';

/**
 * CONTRACT 3: no absolute path, no credential in a response, and the UI proxy's answers are
 * responses too. Behind the proxy, the bridge's authenticated health (dataDir, repoRoot, the trust
 * pin) is cut to its public fields before it reaches the browser; a wrong token still shows.
 */
const b = await startTestBridge();
const ui = await startUi(new URL(b.url), { accessToken: b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']! });
t.teardown(async () => {
  await ui.app.close();
  await cleanup(b);
});

t.test('GET /api/bridge/health carries the public fields and no absolute path', async (t) => {
  const direct = await b.req('GET', '/health');
  t.equal(direct.body['dataDir'], b.t.dataDir, 'the bridge itself reports its paths to a token holder');
  const res = await ui.get('/api/bridge/health');
  t.equal(res.status, 200, res.text);
  t.same(res.json(), {
    ok: true,
    service: direct.body['service'],
    contractVersion: direct.body['contractVersion'],
    bridgeVersion: direct.body['bridgeVersion'],
    listenMode: 'loopback',
  });
  for (const path of [b.t.dir, b.t.dataDir, b.t.repo]) t.notOk(res.text.includes(path), `no ${path}`);
  t.notMatch(res.text, /"\/|[A-Za-z]:\\\\/, 'no string value starts an absolute path');
  for (const name of ['HARNESS_REVIEW_TRUST_SHA256', 'HARNESS_BRIDGE_ACCESS_TOKEN']) {
    t.notOk(res.text.includes(b.t.env[name]!), `no ${name} value`);
  }
});

t.test('a wrong proxy token still shows as the bridge refusing it', async (t) => {
  const wrong = await startUi(new URL(b.url), { accessToken: 'w'.repeat(40) });
  t.teardown(() => wrong.app.close());
  const res = await wrong.get('/api/bridge/health');
  t.equal(res.status, 401, res.text);
  t.equal(res.json()['error'], 'bridge_auth_required');
});
