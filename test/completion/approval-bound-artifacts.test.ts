import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import {
  applyEntry,
  approvalDrift,
  approvalSeal,
  approvalTextBytes,
  emptyState,
  heldApprovalTextBytes,
  type JournalEntry,
  type StoredEvent,
} from '../../src/contract/index.js';
import { runPaths } from '../../src/storage/paths.js';
import { factsFromView } from '../../src/validators/facts-from-view.js';
import { structuralProblems } from '../../src/validators/structural.js';
import { cleanup, ev, makeTestEnv, startTestBridge, type TestBridge } from '../helpers/bridge.js';
import { complete, driveToReady, expectBlocked } from '../helpers/complete-run.js';
import { records } from '../helpers/expect.js';

/**
 * Issue 28 item 2: an approval is bound to what was approved. A grant or denial seals, in its own
 * authenticated journal record, the SHA-256 of every artifact its node had claimed; an artifact
 * claimed again with other bytes afterwards refuses run.completed with a problem naming the
 * artifact and both digests, the node's view shows it, and a fresh request decided again clears
 * it. A denial is held to its bytes the same way.
 */

const REDZONE = 'approvals/redzone.json';
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const key = { nodeId: 'redzone', approvalOwner: 'ops', approvalScope: 'deploy' };
const request = (over: Record<string, unknown> = {}) =>
  ev({ type: 'approval.requested', status: 'needs_approval', ...key, ...over });
const denied = { failureReason: 'not in the change window', recoveryPath: 'ask again on Monday' };
const decide = (type: 'approval.granted' | 'approval.denied', over: Record<string, unknown> = {}) =>
  ev({ type, actor: 'human', ...key, ...(type === 'approval.denied' ? denied : {}), ...over });
const claim = ev({ type: 'artifact.written', nodeId: 'redzone', artifact: REDZONE });
const passed = ev({ type: 'gate.fired', nodeId: 'redzone', nodeState: 'passed', status: 'passed' });

async function started(t: Test): Promise<TestBridge> {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  return b;
}

/** Posts events in order (human ones with the human token); each must be accepted. */
async function post(b: TestBridge, runId: string, ...bodies: Record<string, unknown>[]) {
  for (const body of bodies) {
    const human = body['actor'] === 'human';
    const headers: Record<string, string> = human
      ? { 'x-harness-human-token': b.t.env['HARNESS_HUMAN_APPROVAL_TOKEN']! }
      : {};
    const r = await b.req('POST', `/runs/${runId}/events`, body, headers);
    if (r.status !== 201) throw new Error(`${body['type']}: ${r.status} ${JSON.stringify(r.body)}`);
  }
}

/** Rewrites the red-zone artifact and claims it again; resolves with the new bytes' digest. */
async function rewrite(b: TestBridge, runId: string, text: string): Promise<string> {
  await writeFile(join(b.t.artifactRoot, REDZONE), text);
  await post(b, runId, claim);
  return sha256(text);
}

const view = async (b: TestBridge, runId: string) => (await b.req('GET', `/runs/${runId}`)).body['run'];
const redzone = (run: { nodes: { id: string }[] }) => run.nodes.find((n) => n.id === 'redzone') as any;

t.test('an artifact edited and claimed again after its grant refuses completion', async (t) => {
  const b = await started(t);
  const original = 'deploy build 41 to production\n';
  await driveToReady(b, 'g', { [REDZONE]: original });
  await post(b, 'g', request(), decide('approval.granted'), passed);

  await t.test('the grant records the digest of what its node had claimed', async (t) => {
    const grant = records(await b.journal('g')).find((r) => r.event.type === 'approval.granted');
    t.same(grant?.seal, { approved: { [REDZONE]: sha256(original) } }, 'in the journal record');
    const run = await view(b, 'g');
    t.same(run.approvals[0].approved, { [REDZONE]: sha256(original) }, 'and in the run view');
    t.same(redzone(run).approvalDrift, [], 'nothing has drifted yet');
    t.equal(run.completionPreview.ready, true);
  });

  const edited = await rewrite(b, 'g', 'deploy build 42 to production\n');

  await t.test('the node view and the preview show the drift', async (t) => {
    const run = await view(b, 'g');
    t.match(redzone(run).approvalDrift, [
      {
        path: REDZONE,
        decision: 'granted',
        approvedSha256: sha256(original),
        currentSha256: edited,
        decisions: 1,
      },
    ]);
    t.equal(run.completionPreview.ready, false);
    t.same(
      structuralProblems(factsFromView(run, null)),
      run.completionPreview.problems,
      'facts from the view agree',
    );
  });

  await t.test('run.completed is refused naming the artifact and both digests', async (t) => {
    const { r } = await expectBlocked(t, b, 'g', 1);
    const [problem] = r.body['problems'] as string[];
    t.match(problem, REDZONE);
    t.match(problem, `sha256 ${sha256(original)}`);
    t.match(problem, `sha256 ${edited}`);
    t.match(problem, /was granted \(event \d+\)/);
  });

  await t.test('a decision on another scope does not stand for it', async (t) => {
    await post(
      b,
      'g',
      request({ approvalScope: 'rollback' }),
      decide('approval.granted', { approvalScope: 'rollback' }),
      passed,
    );
    await expectBlocked(t, b, 'g', 1);
  });

  await t.test('a fresh request granted on the new bytes clears it', async (t) => {
    await post(b, 'g', request(), decide('approval.granted'), passed);
    const run = await view(b, 'g');
    t.same(redzone(run).approvalDrift, []);
    t.same(run.approvals.at(-1).approved, { [REDZONE]: edited });
    const done = await complete(b, 'g');
    t.equal(done.status, 201, JSON.stringify(done.body));
  });
});

t.test('a denial stays tied to its bytes', async (t) => {
  const b = await started(t);
  const original = 'drop the orders table\n';
  await driveToReady(b, 'd', { [REDZONE]: original });
  await post(b, 'd', request(), decide('approval.denied'), passed);
  t.equal(
    (await view(b, 'd')).completionPreview.ready,
    true,
    'a denial whose bytes hold does not block by itself',
  );

  const edited = await rewrite(b, 'd', 'drop the orders_old table\n');
  const { r } = await expectBlocked(t, b, 'd', 1);
  t.match(r.body['problems'][0], /was denied \(event \d+\) on artifact approvals\/redzone\.json/);
  t.match(r.body['problems'][0], `sha256 ${edited}`);
  t.match(redzone(await view(b, 'd')).approvalDrift, [{ decision: 'denied', currentSha256: edited }]);

  await post(b, 'd', request(), decide('approval.granted'), passed);
  t.equal((await complete(b, 'd')).status, 201, 'decided again on the new bytes, the run completes');
});

t.test('only other bytes of the decided artifacts count', async (t) => {
  const b = await started(t);
  const text = 'rotate the signing key\n';
  await driveToReady(b, 'u', { [REDZONE]: text });
  await post(b, 'u', request(), decide('approval.granted'), passed);
  await rewrite(b, 'u', text);
  // Another node's artifact is not what the red-zone approval decided on.
  await writeFile(join(b.t.artifactRoot, 'handoff/final.md'), 'handed off, edited\n');
  await post(b, 'u', ev({ type: 'artifact.written', nodeId: 'handoff', artifact: 'handoff/final.md' }));
  t.equal((await complete(b, 'u')).status, 201);
});

t.test('the seal is covered by the journal MAC', async (t) => {
  const te = await makeTestEnv();
  const first = await startTestBridge(te);
  await driveToReady(first, 'm', { [REDZONE]: 'x\n' });
  await post(first, 'm', request(), decide('approval.granted'));
  await first.close();
  // The grant's seal rewritten to other bytes' digest: the record no longer authenticates.
  const path = runPaths(te.dataDir, 'm').journal;
  const text = await readFile(path, 'utf8');
  const forged = text.replace(
    `"approved":{"${REDZONE}":"${sha256('x\n')}"}`,
    `"approved":{"${REDZONE}":"${sha256('y\n')}"}`,
  );
  t.not(forged, text, 'the seal is in the journal line');
  await writeFile(path, forged);
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  const run = await view(b, 'm');
  t.equal(run.status, 'quarantined');
  t.match(run.quarantine.reasons, [/journal record \d+ fails authentication/]);
});

t.test('a decision recorded before the seal binds nothing and replays as it was', async (t) => {
  const te = await makeTestEnv();
  const first = await startTestBridge(te);
  await driveToReady(first, 'old', { [REDZONE]: 'x\n' });
  await post(first, 'old', request());
  // The grant as a bridge before the approval seal wrote it: a record with no seal.
  const loaded = await first.ctx.store.load('old');
  if (loaded.kind !== 'open') throw new Error('the run does not open');
  const grant = { ...decide('approval.granted'), id: 'legacy-grant', ts: new Date().toISOString() };
  await first.ctx.store.append(loaded.run, grant as StoredEvent, null).durable;
  first.ctx.store.release(loaded.run);
  await first.close();

  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  const run = await view(b, 'old');
  t.equal(run.status, 'running', 'the journal authenticates');
  t.match(run.approvals, [{ status: 'granted' }]);
  t.notOk('approved' in run.approvals[0], 'the old decision shows no bound bytes');
  await rewrite(b, 'old', 'other\n');
  await post(b, 'old', passed);
  t.equal((await complete(b, 'old')).status, 201, 'and refuses nothing');
});

t.test('what the state keeps of a seal counts against the approval ceiling, rebuilt alike', async (t) => {
  const state = emptyState('s', '2025-01-01T00:00:00.000Z');
  const at = (seq: number, event: Record<string, unknown>, extra: Partial<JournalEntry> = {}) => {
    const entry: JournalEntry = {
      seq,
      event: { id: `e${seq}`, ts: '2025-01-01T00:00:00.000Z', ...event } as StoredEvent,
      claim: null,
      ...extra,
    };
    applyEntry(state, entry);
  };
  at(0, ev({ type: 'artifact.written', nodeId: 'redzone', artifact: REDZONE }), {
    claim: { path: REDZONE, sha256: 'a'.repeat(64), size: 1, mtimeMs: 0 },
  });
  at(1, request());
  const seal = approvalSeal(state, 'redzone');
  t.same(seal, { approved: { [REDZONE]: 'a'.repeat(64) } });
  at(2, decide('approval.granted'), { seal });
  const expected = approvalTextBytes('ops', 'deploy') + Buffer.byteLength(REDZONE) + 64;
  t.equal(heldApprovalTextBytes(state), expected, 'counted as the decision is applied');
  t.equal(heldApprovalTextBytes(structuredClone(state)), expected, 'and when a snapshot is read back');
  t.same(approvalDrift(state), []);
});
