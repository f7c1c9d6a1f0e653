import { realpath, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';
import { complete, driveToReady } from '../helpers/complete-run.js';
import { connectMcp } from '../helpers/mcp.js';
import { eventTypes } from '../helpers/mcp-workflow.js';

t.test('reports structural, approval, drift and content problems without completing', async (t) => {
  const bridge = await startTestBridge();
  t.teardown(() => cleanup(bridge));
  const mcp = await connectMcp(t, bridge);
  const runId = 'run-check';
  await mcp.call('harness.start_run', { runId, artifactRoot: bridge.t.artifactRoot });
  const wrote = await mcp.call('harness.write_artifact', {
    runId,
    nodeId: 'intake',
    path: 'run/intake.json',
    content: '{}',
  });
  t.equal(wrote.isError, false);
  await writeFile(join(bridge.t.artifactRoot, 'run/intake.json'), '{"changed":true}');
  const asked = await mcp.call('harness.request_approval', {
    runId,
    nodeId: 'redzone',
    approvalOwner: 'ops',
    approvalScope: 'deploy',
    actor: 'runtime-a',
    message: 'deploy?',
  });
  t.equal(asked.isError, false);
  const before = await bridge.journal(runId);

  const r = await mcp.call('harness.finish_line_check', { runId });
  t.equal(r.isError, false, r.isError ? JSON.stringify(r.body) : 'checked');
  t.equal(r.body['ready'], false);
  t.equal(r.body['completed'], false);
  const problems: string[] = r.body['problems'];
  const has = (s: string) => t.ok(problems.includes(s), `reports: ${s}`);
  has('required node intake is pending, not passed');
  has('required artifact proof/proof.json of node prove is not verified');
  has('approval for node redzone (owner ops, scope deploy) is still pending');
  has('artifact run/intake.json changed since it was verified');
  const steps: { problem: string; nodeId?: string; fix: string }[] = r.body['steps'];
  t.same(
    steps.map((s) => s.problem),
    problems,
    'one step per problem, in the same order',
  );
  const stepOf = (p: string) => steps.find((s) => s.problem === p);
  const root = await realpath(bridge.t.artifactRoot);
  t.same(stepOf('required node intake is pending, not passed'), {
    problem: 'required node intake is pending, not passed',
    nodeId: 'intake',
    fix: `harness node pass ${runId} intake`,
  });
  t.equal(
    stepOf('required artifact proof/proof.json of node prove is not verified')?.fix,
    `harness proof run --run ${runId} --artifact-root ${root} -- (test-command) && harness node pass ${runId} prove --artifact proof/proof.json`,
    'the root the session knows is filled in',
  );
  t.equal(
    stepOf('approval for node redzone (owner ops, scope deploy) is still pending')?.fix,
    `harness approve ${runId} --owner ops --scope deploy --grant`,
  );
  t.equal(
    stepOf('artifact run/intake.json changed since it was verified')?.fix,
    `harness emit ${runId} artifact.written intake 'run/intake.json written again' --artifact run/intake.json`,
  );
  t.ok(
    r.body['validatorProblems'].some((p: string) => p.startsWith('proof: ')),
    'the content validators ran locally on the root',
  );
  t.same(
    r.body['bridgeProblems'],
    (await bridge.req('GET', `/runs/${runId}`)).body['run'].completionPreview.problems,
    "the bridge's own completion preview is included as is",
  );
  t.equal(r.body['approvalFactsPartial'], false, 'the view carried every approval');
  t.same(r.body['notes'], []);
  t.same(await bridge.journal(runId), before, 'the check appended nothing');
  t.notOk((await eventTypes(bridge, runId)).includes('run.completed'));
  t.not((await bridge.req('GET', `/runs/${runId}`)).body['run'].status, 'completed');
});

t.test('a view that left approvals out: the check says its approval facts are partial', async (t) => {
  const bridge = await startTestBridge();
  t.teardown(() => cleanup(bridge));
  const mcp = await connectMcp(t, bridge);
  const runId = 'run-long';
  await mcp.call('harness.start_run', { runId, artifactRoot: bridge.t.artifactRoot });
  // About 8 KiB each: 40 pass the view's 256 KiB approval budget.
  for (let i = 0; i < 40; i++) {
    const asked = await bridge.req(
      'POST',
      `/runs/${runId}/events`,
      ev({
        type: 'approval.requested',
        nodeId: 'redzone',
        status: 'needs_approval',
        approvalOwner: 'o'.repeat(4000),
        approvalScope: `${i}-${'s'.repeat(3990)}`,
      }),
    );
    t.equal(asked.status, 201);
  }
  const omitted = (await bridge.req('GET', `/runs/${runId}`)).body['run'].approvalsOmitted;
  t.ok(omitted > 0, `the view left ${omitted} approvals out`);
  const r = await mcp.call('harness.finish_line_check', { runId });
  t.equal(r.isError, false);
  t.equal(r.body['approvalFactsPartial'], true);
  t.match(r.body['notes'], [
    new RegExp(`^approval facts are partial: the run view left ${omitted} approvals out`),
  ]);
});

t.test('a missing run and an unknown root are tool errors with codes', async (t) => {
  const bridge = await startTestBridge();
  t.teardown(() => cleanup(bridge));
  const mcp = await connectMcp(t, bridge);
  const missing = await mcp.call('harness.finish_line_check', { runId: 'nope' });
  t.equal(missing.isError, true);
  t.equal(missing.body['error'], 'run_not_found');
  t.equal(
    (await bridge.req('POST', '/runs', { id: 'rooted', artifactRoot: bridge.t.artifactRoot })).status,
    201,
  );
  const unknown = await mcp.call('harness.finish_line_check', { runId: 'rooted' });
  t.equal(unknown.body['error'], 'artifact_root_unknown');
  const named = await mcp.call('harness.finish_line_check', {
    runId: 'rooted',
    artifactRoot: bridge.t.artifactRoot,
  });
  t.equal(named.isError, false);
  t.equal(named.body['ready'], false);
});

t.test('a quarantined run is a run_quarantined error carrying its reasons', async (t) => {
  const bridge = await startTestBridge();
  t.teardown(() => cleanup(bridge));
  const mcp = await connectMcp(t, bridge);
  await driveToReady(bridge, 'run-q');
  t.equal((await complete(bridge, 'run-q')).status, 201);
  // Byte drift after completion quarantines the run on its next read (CONTRACT 6).
  await writeFile(join(bridge.t.artifactRoot, 'handoff/final.md'), 'edited after completion\n');
  const view = (await bridge.req('GET', '/runs/run-q')).body['run'];
  t.equal(view.status, 'quarantined');
  const before = await bridge.journal('run-q');
  for (const args of [{}, { artifactRoot: bridge.t.artifactRoot }]) {
    const r = await mcp.call('harness.finish_line_check', { runId: 'run-q', ...args });
    t.equal(r.isError, true, JSON.stringify(r.body));
    t.equal(r.body['error'], 'run_quarantined');
    t.same(r.body['problems'], view.quarantine.reasons, 'the quarantine reasons are the problems');
  }
  t.ok(before.equals(await bridge.journal('run-q')), 'journal bytes unchanged');
});
