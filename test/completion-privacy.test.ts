import t from 'tap';
import { cleanup, startTestBridge } from './helpers/bridge.js';
import { driveToReady, expectBlocked } from './helpers/complete-run.js';
import { writeArtifact } from './helpers/expect.js';

/**
 * CONTRACT 6 privacy check at the finish line: run.completed refuses a run whose claimed
 * artifacts or referenced documents carry a bridge credential value (409 finish_line_blocked and
 * a run.blocked record), as a completed-run read would quarantine it; the value is never echoed.
 */
const credentials = [
  'HARNESS_BRIDGE_ACCESS_TOKEN',
  'HARNESS_HUMAN_APPROVAL_TOKEN',
  'HARNESS_BRIDGE_INTEGRITY_KEY',
];

for (const name of credentials) {
  t.test(`${name} in a claimed artifact (handoff/final.md) refuses run.completed`, async (t) => {
    const b = await startTestBridge();
    t.teardown(() => cleanup(b));
    const value = b.t.env[name]!;
    await driveToReady(b, 'p1', { 'handoff/final.md': `handoff notes\nsession: ${value}\n` });
    const { r, blocked } = await expectBlocked(t, b, 'p1', 1);
    t.same(r.body.problems, ['artifact handoff/final.md contains a bridge credential value']);
    t.notMatch(JSON.stringify(r.body), value, 'the credential is never echoed');
    t.notMatch(JSON.stringify(blocked), value, 'nor recorded');
  });
}

t.test(
  'an access token in an unclaimed referenced document (run/packet.json) refuses run.completed',
  async (t) => {
    const b = await startTestBridge();
    t.teardown(() => cleanup(b));
    await driveToReady(b, 'p2');
    await writeArtifact(
      b.t.artifactRoot,
      'run/packet.json',
      JSON.stringify({ note: b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN'] }),
    );
    const { r } = await expectBlocked(t, b, 'p2', 1);
    t.same(r.body.problems, ['artifact run/packet.json contains a bridge credential value']);
  },
);
