import { readdir } from 'node:fs/promises';
import t from 'tap';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';
import { assertEnvelope, raw } from '../helpers/expect.js';

/**
 * A path the router cannot take apart (bad percent-encoding, or a run ID segment longer than its
 * maxParamLength) is answered before any hook runs. It must still be judged as every request is
 * (CONTRACT 4: Host, then Origin, then the token) and refused in the contract envelope (CONTRACT
 * 3), never with the framework's own body, which echoes the path and names a 414 the contract
 * does not have.
 */
t.test('paths the router refuses', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const port = new URL(b.url).port;
  const token = b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!;
  const long = `r${'a'.repeat(299)}`;
  const cases = [
    { method: 'GET', path: '/runs/%zz', code: 'invalid_run_id', status: 400 },
    { method: 'POST', path: '/runs/%zz/events', code: 'invalid_run_id', status: 400 },
    { method: 'GET', path: `/runs/${long}`, code: 'invalid_run_id', status: 400 },
    { method: 'POST', path: `/runs/${long}/events`, code: 'invalid_run_id', status: 400 },
    { method: 'GET', path: '/he%zzalth', code: 'not_found', status: 404 },
  ];
  const send = (c: (typeof cases)[number], headers: Record<string, string>) =>
    raw(b.url, {
      method: c.method,
      path: c.path,
      headers: { host: `127.0.0.1:${port}`, 'content-type': 'application/json', ...headers },
      ...(c.method === 'POST' ? { body: JSON.stringify(ev()) } : {}),
    });
  const dataDir = (await readdir(b.t.dataDir)).sort();

  for (const c of cases) {
    t.test(`${c.method} ${c.path.slice(0, 24)}`, async (t) => {
      const refusals: [Record<string, string>, number, string][] = [
        [{ host: `evil.example:${port}`, 'x-harness-bridge-token': token }, 403, 'host_not_allowed'],
        [{ origin: 'http://evil.example', 'x-harness-bridge-token': token }, 403, 'origin_not_allowed'],
        [{}, 401, 'bridge_auth_required'],
        [{ 'x-harness-bridge-token': token }, c.status, c.code],
      ];
      for (const [headers, status, code] of refusals) {
        const r = await send(c, headers);
        t.equal(r.status, status, `${code}: ${r.text}`);
        assertEnvelope(t, r.body, code);
        t.notOk(r.text.includes('zz') || r.text.includes('aaaa'), 'the path is not echoed');
      }
      t.same((await readdir(b.t.dataDir)).sort(), dataDir, 'nothing was stored');
    });
  }
});
