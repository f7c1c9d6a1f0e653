import { readdir } from 'node:fs/promises';
import t from 'tap';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';
import { assertEnvelope, expectRejected } from '../helpers/expect.js';

/**
 * SPEC Run: a non-canonical run ID is rejected, "never mapped onto another ID". The router
 * percent-decodes the path, so `/runs/%70` used to answer for run `p`, and `POST /runs/%70/events`
 * appended to it. A run ID segment is judged as it was sent: every spelling but the canonical one
 * is 400 `invalid_run_id`, on both routes that take a run ID, and nothing is stored.
 */
t.test('a run ID segment that is not the canonical ID as sent', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  for (const id of ['p', 'run-1']) t.equal((await b.req('POST', `/runs/${id}/events`, ev())).status, 201, id);

  const reads = [
    '/runs/%70',
    '/runs/%70?eventLimit=1',
    '/runs/run%2D1',
    '/runs/run%2d1',
    '/runs/%72un-1',
    '/run%73/%70',
    // Decodes to a canonical ID no run has: refused as a spelling, not answered run_not_found.
    '/runs/%71',
  ];
  t.test('reads', async (t) => {
    const data = (await readdir(b.t.dataDir)).sort();
    for (const path of reads) {
      const r = await b.req('GET', path);
      t.equal(r.status, 400, `${path}: ${JSON.stringify(r.body).slice(0, 200)}`);
      assertEnvelope(t, r.body, 'invalid_run_id');
      t.notOk(JSON.stringify(r.body).includes('run-1'), 'the ID is not echoed');
    }
    t.same((await readdir(b.t.dataDir)).sort(), data, 'the data directory is as it was');
    t.equal((await b.req('GET', '/runs/p')).status, 200, 'the canonical spelling is still answered');
    t.equal((await b.req('GET', '/run%73/p')).status, 200, 'only the run ID segment is judged');
  });

  const writes: [string, string][] = [
    ['p', '/runs/%70/events'],
    ['p', '/runs/%70/event%73'],
    ['run-1', '/runs/run%2D1/events'],
    ['run-1', '/runs/%72%75%6E%2D%31/events'],
    // A run that does not exist yet: no run directory may be left behind.
    ['q', '/runs/%71/events'],
  ];
  t.test('writes', async (t) => {
    for (const [id, path] of writes) {
      await expectRejected(t, b, id, () => b.req('POST', path, ev({ message: path })), 400, 'invalid_run_id');
    }
    t.equal(
      (await b.req('POST', '/runs/p/events', ev())).status,
      201,
      'the canonical spelling still appends',
    );
  });
});
