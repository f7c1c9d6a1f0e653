import t from 'tap';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';
import { expectRejected } from '../helpers/expect.js';

/**
 * CONTRACT 5's table, spelled out here rather than imported (the tests that import
 * DEFAULT_ARTIFACT_BY_NODE would follow any edit of it): a run without an adapter requires all 14
 * nodes, in this order, each with this artifact, and `artifact.written` takes exactly that path.
 */
const CONTRACT_TABLE: [string, string][] = [
  ['intake', 'run/intake.json'],
  ['route', 'run/route.json'],
  ['code-intelligence', 'graph/graph.json'],
  ['design-anchors', 'design/anchors.json'],
  ['system-design', 'design/system_design.md'],
  ['production-readiness', 'production/layer-assessment.json'],
  ['cloud-platform', 'cloud/service-map.json'],
  ['implement', 'session/events.jsonl'],
  ['redzone', 'approvals/redzone.json'],
  ['qa-break-it', 'qa/break-it-results.md'],
  ['prove', 'proof/proof.json'],
  ['live-smoke', 'smoke/smoke_proof.json'],
  ['self-heal', 'self_heal/self_heal_report.md'],
  ['handoff', 'handoff/final.md'],
];

t.test('a run without an adapter: every node required, with its default artifact', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  t.equal((await b.req('POST', '/runs/dn/events', ev({ artifactRoot: b.t.artifactRoot }))).status, 201);
  const { nodes } = (await b.req('GET', '/runs/dn')).body['run'];
  t.same(
    nodes.map((n: { id: string; artifact: string; required: boolean }) => [n.id, n.artifact, n.required]),
    CONTRACT_TABLE.map(([id, artifact]) => [id, artifact, true]),
  );
  // A path other than the node's own is refused, naming the one it takes.
  const other = await expectRejected(
    t,
    b,
    'dn',
    () =>
      b.req(
        'POST',
        '/runs/dn/events',
        ev({ type: 'artifact.written', nodeId: 'self-heal', artifact: 'self_heal/report.md' }),
      ),
    400,
    'artifact_verification_failed',
  );
  t.equal(other.body['message'], 'node self-heal writes exactly self_heal/self_heal_report.md');
});
