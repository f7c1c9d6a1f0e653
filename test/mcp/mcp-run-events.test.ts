import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { cleanup, startTestBridge } from '../helpers/bridge.js';
import { storedRun } from '../helpers/expect.js';
import { connectMcp, live } from '../helpers/mcp.js';

t.test('harness.start_run creates, repeats idempotently and refuses a conflicting repeat', async (t) => {
  const bridge = await startTestBridge();
  t.teardown(() => cleanup(bridge));
  const mcp = await connectMcp(t, bridge);
  const first = await mcp.call('harness.start_run', {
    runId: 'run-start',
    title: 'via mcp',
    artifactRoot: bridge.t.artifactRoot,
  });
  t.equal(first.isError, false, first.isError ? JSON.stringify(first.body) : 'created');
  t.equal(first.body['created'], true);
  t.equal(first.body['run'].id, 'run-start');
  t.equal(first.body['run'].artifactRootSet, true);
  t.notMatch(JSON.stringify(first.body), bridge.t.artifactRoot, 'the absolute root is never echoed');

  const again = await mcp.call('harness.start_run', { runId: 'run-start', title: 'via mcp' });
  t.equal(again.isError, false);
  t.equal(again.body['created'], false);

  const stored = await storedRun(bridge, 'run-start');
  const conflict = await mcp.call('harness.start_run', { runId: 'run-start', title: 'other' });
  t.equal(conflict.isError, true);
  t.equal(conflict.body['error'], 'run_already_exists');
  t.equal(conflict.body['httpStatus'], 409);
  t.ok(conflict.body['problems'].some((p: string) => p.startsWith('title')));
  t.same(await storedRun(bridge, 'run-start'), stored, 'the run, its config included, is unchanged');
  t.equal((await bridge.req('GET', '/runs/run-start')).body['run'].title, 'via mcp');

  const badRoot = await mcp.call('harness.start_run', { runId: 'run-rel', artifactRoot: 'relative/dir' });
  t.equal(badRoot.body['error'], 'artifact_verification_failed');
  t.equal((await bridge.req('GET', '/runs/run-rel')).status, 404, 'no run was created');
});

t.test('harness.emit_event posts a RunEvent with mcp as its source', async (t) => {
  const bridge = await startTestBridge();
  t.teardown(() => cleanup(bridge));
  const mcp = await connectMcp(t, bridge);
  const r = await mcp.call('harness.emit_event', {
    runId: 'run-emit',
    type: 'node.entered',
    nodeId: 'intake',
    artifactRoot: bridge.t.artifactRoot,
    ...live,
  });
  t.equal(r.isError, false, r.isError ? JSON.stringify(r.body) : 'accepted');
  t.equal(r.body['seq'], 0);
  t.equal(r.body['event'].eventSource, 'mcp');
  t.equal(r.body['event'].runMode, 'live');
  const view = await bridge.req('GET', '/runs/run-emit');
  t.equal(view.body['run'].nodes[0].state, 'active');
  t.equal(view.body['run'].events[0].eventSource, 'mcp');

  const passed = await mcp.call('harness.emit_event', {
    runId: 'run-emit',
    type: 'gate.fired',
    nodeId: 'intake',
    nodeState: 'passed',
    ...live,
    status: 'passed',
  });
  t.equal(passed.isError, false);
  t.equal((await bridge.req('GET', '/runs/run-emit')).body['run'].nodes[0].state, 'passed');
});

t.test('harness.emit_event returns the contract code and every problem, storing nothing', async (t) => {
  const bridge = await startTestBridge();
  t.teardown(() => cleanup(bridge));
  const mcp = await connectMcp(t, bridge);
  await mcp.call('harness.emit_event', { runId: 'run-bad', type: 'node.entered', nodeId: 'intake', ...live });
  const before = await bridge.journal('run-bad');

  const failed = await mcp.call('harness.emit_event', {
    runId: 'run-bad',
    type: 'node.failed',
    nodeId: 'intake',
    ...live,
    status: 'failed',
  });
  t.equal(failed.isError, true);
  t.equal(failed.body['error'], 'event_contract_violation');
  t.equal(failed.body['httpStatus'], 400);
  t.ok(failed.body['problems'].some((p: string) => p.includes('failureReason')));
  t.ok(
    failed.body['problems'].some((p: string) => p.includes('recoveryPath')),
    'all problems at once',
  );

  const mode = await mcp.call('harness.emit_event', {
    runId: 'run-bad',
    type: 'node.entered',
    nodeId: 'route',
    runMode: 'replay',
    eventSource: 'mcp',
    ...live,
  });
  t.equal(mode.body['error'], 'event_contract_violation', 'mcp is a live source only');

  const grant = await mcp.call('harness.emit_event', {
    runId: 'run-bad',
    type: 'approval.granted',
    nodeId: 'intake',
    actor: 'human',
    message: 'self-approve',
    status: 'ok',
    approvalOwner: 'o',
    approvalScope: 's',
  });
  t.equal(grant.isError, true);
  t.equal(grant.body['error'], 'human_approval_required', 'the tool server cannot approve');
  t.same(await bridge.journal('run-bad'), before, 'the journal is byte-for-byte unchanged');
});

t.test('harness.request_approval pauses the node; a duplicate request is refused', async (t) => {
  const bridge = await startTestBridge();
  t.teardown(() => cleanup(bridge));
  const mcp = await connectMcp(t, bridge);
  const ask = {
    runId: 'run-ask',
    nodeId: 'redzone',
    approvalOwner: 'ops-lead',
    approvalScope: 'deploy to production',
    actor: 'runtime-b',
    message: 'red zone: deploy',
  };
  const r = await mcp.call('harness.request_approval', ask);
  t.equal(r.isError, false, r.isError ? JSON.stringify(r.body) : 'accepted');
  t.equal(r.body['event'].type, 'approval.requested');
  t.equal(r.body['event'].status, 'needs_approval');
  const view = (await bridge.req('GET', '/runs/run-ask')).body['run'];
  t.equal(view.nodes.find((n: { id: string }) => n.id === 'redzone').state, 'needs_approval');
  t.same(
    view.approvals.map((a: { owner: string; scope: string; status: string }) => [a.owner, a.scope, a.status]),
    [['ops-lead', 'deploy to production', 'pending']],
  );
  const before = await bridge.journal('run-ask');
  const dup = await mcp.call('harness.request_approval', ask);
  t.equal(dup.isError, true);
  t.equal(dup.body['error'], 'event_state_violation');
  const blank = await mcp.call('harness.request_approval', {
    ...ask,
    approvalOwner: ' ',
    approvalScope: 'x',
  });
  t.equal(blank.body['error'], 'event_contract_violation', 'a blank owner is refused by the bridge');
  t.same(await bridge.journal('run-ask'), before, 'nothing stored');
});

t.test('a root named on a refused start_run or emit_event is not remembered', async (t) => {
  const bridge = await startTestBridge();
  t.teardown(() => cleanup(bridge));
  const mcp = await connectMcp(t, bridge);
  const root = bridge.t.artifactRoot;
  const runId = 'run-roots';
  // Another client created the run and sealed its root; this session has not seen it.
  t.equal((await bridge.req('POST', '/runs', { id: runId, title: 'a', artifactRoot: root })).status, 201);
  const supporting = { runId, nodeId: 'implement', path: 'rca/notes.json', content: '{}', emit: false };
  const unknownRoot = async (after: string) => {
    const r = await mcp.call('harness.write_artifact', supporting);
    t.equal(r.body['error'], 'artifact_root_unknown', `after ${after}, the session knows no root`);
    await t.rejects(lstat(join(root, 'rca/notes.json')), `after ${after}, nothing was written`);
  };
  await unknownRoot('nothing');
  const stored = await storedRun(bridge, runId);

  const start = await mcp.call('harness.start_run', { runId, title: 'b', artifactRoot: root });
  t.equal(start.body['error'], 'run_already_exists');
  await unknownRoot('a refused start_run');

  const emit = await mcp.call('harness.emit_event', {
    runId,
    type: 'node.failed',
    nodeId: 'intake',
    ...live,
    status: 'failed',
    artifactRoot: root,
  });
  t.equal(emit.body['error'], 'event_contract_violation');
  await unknownRoot('a refused emit_event');
  const check = await mcp.call('harness.finish_line_check', { runId });
  t.equal(check.body['error'], 'artifact_root_unknown', 'finish_line_check knows no root either');
  t.same(await storedRun(bridge, runId), stored, 'the refusals stored nothing');

  // The control: the same root on an accepted event is remembered.
  const accepted = await mcp.call('harness.emit_event', {
    runId,
    type: 'node.entered',
    nodeId: 'intake',
    ...live,
    artifactRoot: root,
  });
  t.equal(accepted.isError, false, accepted.isError ? JSON.stringify(accepted.body) : 'accepted');
  const written = await mcp.call('harness.write_artifact', supporting);
  t.equal(written.isError, false, written.isError ? JSON.stringify(written.body) : 'written under it');
});
