import t from 'tap';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';
import { bridgeClientEnv, expectRefused, runCli } from '../helpers/cli.js';

/**
 * Issue 29 item 1: `harness node skip|fail` post the event with the reasons the bridge requires
 * (CONTRACT 5), through emit's client; a missing or blank reason, or an unknown node, is refused
 * before any request (exit 2, one line, the journal unchanged). `node pass` against the real gate:
 * commissioned-run-writers.test.ts.
 */
t.test('harness node skip and fail', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const env = bridgeClientEnv(b);
  const node = (...args: string[]) => runCli(['node', ...args], env);
  t.equal((await b.req('POST', '/runs/nd/events', ev())).status, 201);
  const view = async (id: string) =>
    (await b.req('GET', '/runs/nd')).body['run'].nodes.find((n: { id: string }) => n.id === id);

  t.test('refusals post nothing', async (t) => {
    const before = await b.journal('nd');
    for (const [args, fragment] of [
      [['skip', 'nd', 'intake'], "required option '--reason <text>'"],
      [['skip', 'nd', 'intake', '--reason', '  '], '--reason must not be blank'],
      [['fail', 'nd', 'intake', '--reason', 'broke'], "required option '--recovery <text>'"],
      [['fail', 'nd', 'intake', '--reason', 'broke', '--recovery', ''], '--recovery must not be blank'],
      [['pass', 'nd', 'no-such-node', '--artifact', 'x.json'], 'no-such-node is not a node ID'],
      [['skip', '..', 'intake', '--reason', 'r'], 'the run ID is not canonical'],
    ] as const) {
      expectRefused(t, await node(...args), fragment);
    }
    t.ok(before.equals(await b.journal('nd')), 'journal unchanged');
  });

  t.test('skip and fail set the node with their reasons', async (t) => {
    const skip = await node('skip', 'nd', 'design-anchors', '--reason', 'no UI in this change');
    t.equal(skip.exitCode, 0, skip.stderr);
    t.match(await view('design-anchors'), { state: 'skipped', skipReason: 'no UI in this change' });
    const fail = await node('fail', 'nd', 'live-smoke', '--reason', 'staging down', '--recovery', 'rerun');
    t.equal(fail.exitCode, 0, fail.stderr);
    t.match(await view('live-smoke'), {
      state: 'failed',
      failureReason: 'staging down',
      recoveryPath: 'rerun',
    });
  });

  t.test('pass without an artifact root is the bridge refusing it: exit 1, node unchanged', async (t) => {
    const r = await node('pass', 'nd', 'intake');
    t.equal(r.exitCode, 1, r.stderr);
    t.match(r.stderr, /^event_state_violation: the run has no artifactRoot/);
    t.match(await view('intake'), { state: 'active' });
  });
});
