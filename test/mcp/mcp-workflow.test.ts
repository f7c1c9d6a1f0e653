import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { DEFAULT_ARTIFACT_BY_NODE, NODE_IDS } from '../../src/contract/index.js';
import { cleanup } from '../helpers/bridge.js';
import { connectMcp, live } from '../helpers/mcp.js';
import { eventTypes, goodArtifacts, passAllNodes, startGatedBridge } from '../helpers/mcp-workflow.js';

/**
 * The "done when": an agent with only the tool server configured runs a whole workflow
 * (all 14 default nodes required, every artifact written and verified, proof and layer assessment
 * validated by the real finish-line children) to a completed run.
 */
t.test('a whole workflow through the tool server alone reaches a completed run', async (t) => {
  const bridge = await startGatedBridge();
  t.teardown(() => cleanup(bridge));
  const mcp = await connectMcp(t, bridge);
  const runId = 'run-mcp-whole';
  const root = bridge.t.artifactRoot;

  const started = await mcp.call('harness.start_run', {
    runId,
    title: 'health endpoint',
    agent: 'runtime-a',
    runMode: 'live',
    eventSource: 'mcp',
    artifactRoot: root,
  });
  t.equal(started.isError, false, 'started');
  t.same(
    started.body['run'].nodes.filter((n: { required: boolean }) => n.required).length,
    14,
    'the default adapter requires all 14 nodes',
  );
  const contents = goodArtifacts(runId);
  t.same(await passAllNodes(mcp, runId, contents, DEFAULT_ARTIFACT_BY_NODE), [], 'every step accepted');

  const check = await mcp.call('harness.finish_line_check', { runId });
  t.equal(check.isError, false);
  t.same(check.body['problems'], [], 'nothing blocks completion');
  t.equal(check.body['ready'], true);
  t.notOk((await eventTypes(bridge, runId)).includes('run.completed'), 'the check completed nothing');

  const done = await mcp.call('harness.emit_event', {
    runId,
    type: 'run.completed',
    nodeId: 'handoff',
    ...live,
    message: 'workflow complete',
  });
  t.equal(done.isError, false, done.isError ? JSON.stringify(done.body) : 'completion accepted');
  const view = (await bridge.req('GET', `/runs/${runId}`)).body['run'];
  t.equal(view.status, 'completed');
  t.ok(
    view.nodes.every(
      (n: { state: string; artifactVerified: boolean }) => n.state === 'passed' && n.artifactVerified,
    ),
  );
  for (const id of NODE_IDS) {
    const path = DEFAULT_ARTIFACT_BY_NODE[id];
    const claim = view.artifacts.find((a: { path: string }) => a.path === path);
    const onDisk = await readFile(join(root, path));
    t.equal(claim?.sha256, createHash('sha256').update(onDisk).digest('hex'), `${path} claim matches`);
  }

  const after = await mcp.call('harness.finish_line_check', { runId });
  t.equal(after.body['completed'], true);
  const journal = await bridge.journal(runId);
  const closed = await mcp.call('harness.write_artifact', {
    runId,
    nodeId: 'handoff',
    path: 'handoff/final.md',
    content: 'rewritten after completion',
  });
  t.equal(closed.body['error'], 'run_closed', 'a completed run is never rewritten');
  t.equal(await readFile(join(root, 'handoff/final.md'), 'utf8'), contents.handoff);
  t.ok((await bridge.journal(runId)).equals(journal), 'nothing was appended');
});
