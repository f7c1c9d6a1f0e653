import { PassThrough } from 'node:stream';
import t from 'tap';
import { approve } from '../../src/cli/approve.js';
import { cleanup, ev, makeTestEnv } from '../helpers/bridge.js';
import { startWithQuarantinedRun } from '../helpers/quarantine.js';

/**
 * `harness approve` on a run the bridge quarantined (its sealed config fails authentication): the
 * view has no approvals and the run accepts no event, so approve says the run is quarantined, lists
 * the bridge's reasons and exits 1, never "no pending approval", and stores nothing.
 */
t.test('approve on a quarantined run names the quarantine and its reasons, exits 1', async (t) => {
  const te = await makeTestEnv();
  const request = ev({
    type: 'approval.requested',
    nodeId: 'redzone',
    status: 'needs_approval',
    approvalOwner: 'sec',
    approvalScope: 'deploy',
  });
  const b = await startWithQuarantinedRun(t, te, 'victim', async (seeded) => {
    t.equal((await seeded.req('POST', '/runs/victim/events', request)).status, 201);
  });
  t.teardown(() => cleanup(b));
  const reasons: string[] = (await b.req('GET', '/runs/victim')).body['run'].quarantine.reasons;
  t.ok(reasons.length > 0, 'the bridge gives reasons');
  const journal = await b.journal('victim');

  const out = { stdout: '', stderr: '' };
  const io = {
    env: {
      HARNESS_BRIDGE_URL: b.url,
      HARNESS_BRIDGE_ACCESS_TOKEN: te.env['HARNESS_BRIDGE_ACCESS_TOKEN'],
      HARNESS_HUMAN_APPROVAL_TOKEN: te.env['HARNESS_HUMAN_APPROVAL_TOKEN'],
    },
    argv: [],
    stdin: Object.assign(new PassThrough(), { isTTY: false }),
    stdout: new PassThrough().on('data', (c) => (out.stdout += c)),
    stderr: new PassThrough().on('data', (c) => (out.stderr += c)),
  };
  const code = await approve('victim', { owner: 'sec', scope: 'deploy', grant: true, yes: true }, io);
  t.equal(code, 1, 'the request failed');
  t.same(out.stderr.split('\n').filter(Boolean), [
    'harness approve: run victim is quarantined and accepts no approval decision',
    ...reasons.map((r) => `  quarantined: ${r}`),
  ]);
  t.equal(out.stdout, '', 'no approval is shown for confirmation');
  t.same(await b.journal('victim'), journal, 'the journal is byte-for-byte unchanged');
});
