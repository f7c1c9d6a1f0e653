import t from 'tap';
import { DEFAULT_ARTIFACT_BY_NODE } from '../../src/contract/index.js';
import { cleanup } from '../helpers/bridge.js';
import { connectMcp, live } from '../helpers/mcp.js';
import { eventTypes, goodArtifacts, passAllNodes, startGatedBridge } from '../helpers/mcp-workflow.js';

/**
 * harness.finish_line_check runs the content validators locally on the artifact root, so it sees
 * what the bridge's completion preview (structural rules only) cannot, and it agrees with the
 * bridge's real gate: every problem it reports is one the refused run.completed reports too.
 */
t.test('content problems the preview cannot see are found before run.completed is refused', async (t) => {
  const bridge = await startGatedBridge();
  t.teardown(() => cleanup(bridge));
  const mcp = await connectMcp(t, bridge);
  const runId = 'run-bad-proof';
  await mcp.call('harness.start_run', { runId, artifactRoot: bridge.t.artifactRoot });
  const contents = goodArtifacts(runId);
  const proof = JSON.parse(contents.prove);
  proof.status = 'failed';
  proof.commands[0].exitCode = 2;
  contents.prove = JSON.stringify(proof);
  const layers = JSON.parse(contents['production-readiness']);
  layers.layers = layers.layers.filter((l: { layer: string }) => l.layer !== 'security');
  contents['production-readiness'] = JSON.stringify(layers);
  t.same(await passAllNodes(mcp, runId, contents, DEFAULT_ARTIFACT_BY_NODE), []);

  const before = await bridge.journal(runId);
  const r = await mcp.call('harness.finish_line_check', { runId });
  t.equal(r.body['ready'], false);
  t.same(r.body['bridgeProblems'], [], 'structurally the run looks complete');
  const problems: string[] = r.body['problems'];
  t.ok(problems.includes('proof: proof/proof.json status is failed, not passed'));
  t.ok(problems.includes('proof: proof/proof.json command 0 exited 2, not 0'));
  t.ok(
    problems.includes(
      'production-readiness: production/layer-assessment.json does not assess layer security',
    ),
  );
  t.same(await bridge.journal(runId), before, 'the check appended nothing');
  t.equal((await bridge.req('GET', `/runs/${runId}`)).body['run'].status, 'running');

  const refused = await mcp.call('harness.emit_event', {
    runId,
    type: 'run.completed',
    nodeId: 'handoff',
    ...live,
  });
  t.equal(refused.isError, true);
  t.equal(refused.body['error'], 'finish_line_blocked');
  for (const p of problems) t.ok(refused.body['problems'].includes(p), `the bridge agrees: ${p}`);
  t.notOk((await eventTypes(bridge, runId)).includes('run.completed'));
});
