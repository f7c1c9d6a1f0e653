import { readFileSync } from 'node:fs';
import { mkdir, realpath, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import t, { type Test } from 'tap';
import { DEFAULT_ARTIFACT_BY_NODE, NODE_IDS, type NodeId } from '../../src/contract/index.js';
import type { FinishLineGate } from '../../src/server/context.js';
import { COMMIT_LOG_FILE } from '../../src/storage/commit-log-replay.js';
import { structuralProblems } from '../../src/validators/structural.js';
import { cleanup, ev, startTestBridge, type TestBridge } from '../helpers/bridge.js';
import { expectBlocked } from '../helpers/complete-run.js';
import { expectRejected, records } from '../helpers/expect.js';
import { patchFs, pathOfFd } from '../helpers/patch-fs.js';

/**
 * SPEC completion rules 1-4 and 10, CONTRACT 5: each structural rule alone blocks `run.completed`
 * (409 finish_line_blocked with the problems, and a `run.blocked` record appended by the bridge);
 * a run that satisfies them completes and is then closed.
 */
interface DriveOptions {
  omitNode?: NodeId[];
  omitArtifact?: NodeId[];
  skip?: NodeId[];
}

async function drive(b: TestBridge, runId: string, o: DriveOptions = {}, over: Record<string, unknown> = {}) {
  const post = async (body: Record<string, unknown>) => {
    const r = await b.req('POST', `/runs/${runId}/events`, { ...body, ...over });
    if (r.status !== 201) throw new Error(`${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
  };
  await post(ev({ type: 'run.created', artifactRoot: b.t.artifactRoot }));
  // Nodes are independent: drive them in parallel (their events share group commits).
  await Promise.all(
    NODE_IDS.map(async (nodeId) => {
      if (o.omitNode?.includes(nodeId)) return;
      if (o.skip?.includes(nodeId)) {
        await post(ev({ type: 'node.skipped', nodeId, status: 'skipped', skipReason: 'not in scope' }));
        return;
      }
      const path = DEFAULT_ARTIFACT_BY_NODE[nodeId];
      await mkdir(dirname(join(b.t.artifactRoot, path)), { recursive: true });
      await writeFile(join(b.t.artifactRoot, path), `artifact of ${nodeId}\n`);
      await post(ev({ nodeId }));
      if (!o.omitArtifact?.includes(nodeId))
        await post(ev({ type: 'artifact.written', nodeId, artifact: path }));
      await post(ev({ type: 'gate.fired', nodeId, nodeState: 'passed', status: 'passed' }));
    }),
  );
}

const completion = (over: Record<string, unknown> = {}) =>
  ev({ type: 'run.completed', nodeId: 'handoff', status: 'passed', ...over });

/** One bridge for the file; each test gets its own run and artifact root, and may install a gate. */
const gates = new Map<string, FinishLineGate>();
const shared = await startTestBridge(undefined, {
  finishLine: async (facts, env) => (await gates.get(facts.runId)?.(facts, env)) ?? [],
});
t.teardown(() => cleanup(shared));
let roots = 0;
const setup = async (
  _t: Test,
  opts: { finishLine?: FinishLineGate; runId?: string } = {},
): Promise<TestBridge> => {
  const artifactRoot = join(shared.t.dir, `root-${++roots}`);
  await mkdir(artifactRoot);
  if (opts.finishLine && opts.runId) gates.set(opts.runId, opts.finishLine);
  return { ...shared, t: { ...shared.t, artifactRoot } };
};

t.test('rule 1: a required node not passed blocks (and the block is recorded)', async (t) => {
  const b = await setup(t);
  await drive(b, 'c1', { omitNode: ['live-smoke'] });
  // Pending node and its missing artifact: rules 1 and 2 both report.
  const { blocked } = await expectBlocked(t, b, 'c1', 2);
  t.equal((await b.req('GET', '/runs/c1')).body['run'].completionPreview.ready, false, 'the preview agrees');
  t.equal(blocked.event.eventSource, 'bridge');
  t.equal(blocked.event.nodeId, 'handoff');
  // A later ordinary event returns the run to running.
  t.equal(
    (await b.req('POST', '/runs/c1/events', ev({ nodeId: 'live-smoke' }))).body['run'].status,
    'running',
  );
});

t.test('the run.blocked of a replay or blueprint run keeps a source its mode allows', async (t) => {
  // CONTRACT 5 names source bridge, which the seed's mode/source table allows on live runs only; on
  // other runs the bridge's record takes the completion's own source (docs/api.md).
  const b = await setup(t);
  for (const [runId, runMode, eventSource] of [
    ['c-replay', 'replay', 'database'],
    ['c-blueprint', 'blueprint', 'static-blueprint'],
  ] as const) {
    t.equal((await b.req('POST', `/runs/${runId}/events`, ev({ runMode, eventSource }))).status, 201);
    // Nothing was passed: each of the 14 required nodes and its artifact fail.
    const { blocked } = await expectBlocked(t, b, runId, 28, { runMode, eventSource });
    t.match(blocked.event, { actor: 'system', runMode, eventSource }, runId);
  }
});

t.test('rule 1: an active (entered, not passed) required node blocks', async (t) => {
  const b = await setup(t);
  await drive(b, 'c2');
  t.equal((await b.req('POST', '/runs/c2/events', ev({ nodeId: 'qa-break-it' }))).status, 201);
  await expectBlocked(t, b, 'c2', 1);
});

t.test('rule 2: a passed node whose artifact was never verified blocks', async (t) => {
  const b = await setup(t);
  await drive(b, 'c3', { omitArtifact: ['qa-break-it'] });
  await expectBlocked(t, b, 'c3', 1);
});

t.test('rule 2: a failed node blocks', async (t) => {
  const b = await setup(t);
  await drive(b, 'c4');
  const failed = ev({
    type: 'node.failed',
    nodeId: 'implement',
    status: 'failed',
    failureReason: 'f',
    recoveryPath: 'p',
  });
  t.equal((await b.req('POST', '/runs/c4/events', failed)).status, 201);
  // Not passed (rule 1), and its artifact cannot count (rule 2): the node failed, not a write.
  const { r } = await expectBlocked(t, b, 'c4', 2);
  t.ok(
    (r.body['problems'] as string[]).includes(
      `required artifact ${DEFAULT_ARTIFACT_BY_NODE.implement} cannot count: its node implement failed`,
    ),
    JSON.stringify(r.body['problems']),
  );
});

t.test('rule 3: a pending approval blocks', async (t) => {
  const b = await setup(t);
  await drive(b, 'c5');
  const request = ev({
    type: 'approval.requested',
    nodeId: 'redzone',
    status: 'needs_approval',
    approvalOwner: 'ops',
    approvalScope: 'deploy',
  });
  t.equal((await b.req('POST', '/runs/c5/events', request)).status, 201);
  // Put the node back to passed so only the pending approval remains.
  t.equal(
    (
      await b.req(
        'POST',
        '/runs/c5/events',
        ev({ type: 'gate.fired', nodeId: 'redzone', nodeState: 'passed', status: 'passed' }),
      )
    ).status,
    201,
  );
  await expectBlocked(t, b, 'c5', 1);
  const grant = await b.req(
    'POST',
    '/runs/c5/events',
    ev({
      type: 'approval.granted',
      actor: 'human',
      nodeId: 'redzone',
      approvalOwner: 'ops',
      approvalScope: 'deploy',
    }),
    { 'x-harness-human-token': b.t.env['HARNESS_HUMAN_APPROVAL_TOKEN']! },
  );
  t.equal(grant.status, 201);
  t.equal(
    (
      await b.req(
        'POST',
        '/runs/c5/events',
        ev({ type: 'gate.fired', nodeId: 'redzone', nodeState: 'passed', status: 'passed' }),
      )
    ).status,
    201,
  );
  t.equal((await b.req('POST', '/runs/c5/events', completion())).status, 201, 'completes once decided');
});

t.test('rule 4: self_heal.detected needs a later resolution', async (t) => {
  const b = await setup(t);
  await drive(b, 'c6');
  const opened = ev({
    type: 'self_heal.pr_opened',
    nodeId: 'self-heal',
    selfHealPrUrl: 'https://github.com/o/r/pull/9',
  });
  // A resolution before the detection does not count.
  t.equal((await b.req('POST', '/runs/c6/events', opened)).status, 201);
  t.equal(
    (await b.req('POST', '/runs/c6/events', ev({ type: 'self_heal.detected', nodeId: 'self-heal' }))).status,
    201,
  );
  await expectBlocked(t, b, 'c6', 1);
  const pending = (await b.req('GET', '/runs/c6')).body['run'].selfHeal;
  t.match(pending, { detected: true, resolved: false }, 'the view shows the open detection');
  t.equal((await b.req('POST', '/runs/c6/events', opened)).status, 201);
  t.equal((await b.req('POST', '/runs/c6/events', completion())).status, 201);
});

t.test('rule 4: a verified self_heal/pr.json proposal resolves a detection', async (t) => {
  const b = await setup(t);
  await drive(b, 'c7');
  t.equal(
    (await b.req('POST', '/runs/c7/events', ev({ type: 'self_heal.detected', nodeId: 'self-heal' }))).status,
    201,
  );
  await expectBlocked(t, b, 'c7', 1);
  await writeFile(
    join(b.t.artifactRoot, 'self_heal', 'pr.json'),
    '{"schema":"harness.self-heal-proposal.v1"}',
  );
  const proposed = ev({ type: 'self_heal.pr_proposed', nodeId: 'self-heal', artifact: 'self_heal/pr.json' });
  const r = await b.req('POST', '/runs/c7/events', proposed);
  t.equal(r.status, 201, JSON.stringify(r.body));
  t.equal((await b.req('POST', '/runs/c7/events', completion())).status, 201);
});

t.test('rule 4: a proposal whose write reported failed resolves nothing', async (t) => {
  const b = await setup(t);
  await drive(b, 'c7f');
  const detected = ev({ type: 'self_heal.detected', nodeId: 'self-heal' });
  t.equal((await b.req('POST', '/runs/c7f/events', detected)).status, 201);
  await writeFile(
    join(b.t.artifactRoot, 'self_heal', 'pr.json'),
    '{"schema":"harness.self-heal-proposal.v1"}',
  );
  const proposed = ev({ type: 'self_heal.pr_proposed', nodeId: 'self-heal', artifact: 'self_heal/pr.json' });
  const failed = {
    ...proposed,
    status: 'failed',
    failureReason: 'the patch does not apply',
    recoveryPath: 'rebase the patch and propose it again',
  };
  const r = await b.req('POST', '/runs/c7f/events', failed);
  t.equal(r.status, 201, JSON.stringify(r.body));
  const { r: blocked } = await expectBlocked(t, b, 'c7f', 1);
  t.match(blocked.body['problems'], [/^self-heal resolution carries neither a pull request URL nor/]);
  t.equal((await b.req('POST', '/runs/c7f/events', proposed)).status, 201);
  t.equal((await b.req('POST', '/runs/c7f/events', completion())).status, 201);
});

t.test(
  'rule 4: selfHealPrUrl naming the local proposal resolves a detection like the artifact form',
  async (t) => {
    const b = await setup(t);
    await drive(b, 'c7b');
    t.equal(
      (await b.req('POST', '/runs/c7b/events', ev({ type: 'self_heal.detected', nodeId: 'self-heal' })))
        .status,
      201,
    );
    const proposed = ev({
      type: 'self_heal.pr_proposed',
      nodeId: 'self-heal',
      selfHealPrUrl: 'self_heal/pr.json',
    });
    // Named but not written yet: refused before append, like the artifact form.
    await expectRejected(
      t,
      b,
      'c7b',
      () => b.req('POST', '/runs/c7b/events', proposed),
      400,
      'artifact_verification_failed',
    );
    await expectBlocked(t, b, 'c7b', 1);
    await writeFile(
      join(b.t.artifactRoot, 'self_heal', 'pr.json'),
      '{"schema":"harness.self-heal-proposal.v1"}',
    );
    const r = await b.req('POST', '/runs/c7b/events', proposed);
    t.equal(r.status, 201, JSON.stringify(r.body));
    t.equal(r.body['event'].claim?.path, 'self_heal/pr.json', 'the proposal is claimed in the journal');
    t.equal(records(await b.journal('c7b')).at(-1)?.claim?.path, 'self_heal/pr.json');
    const view = (await b.req('GET', '/runs/c7b')).body['run'];
    t.match(view.selfHeal, { resolved: true, artifact: 'self_heal/pr.json', prUrl: null });
    t.equal(view.completionPreview.ready, true, JSON.stringify(view.completionPreview));
    t.equal((await b.req('POST', '/runs/c7b/events', completion())).status, 201);
  },
);

t.test('rule 10: a required artifact changed or deleted after its claim blocks', async (t) => {
  const b = await setup(t);
  await drive(b, 'c8');
  await writeFile(join(b.t.artifactRoot, 'proof/proof.json'), 'edited after the claim\n');
  await expectBlocked(t, b, 'c8', 1);
  await rm(join(b.t.artifactRoot, 'handoff/final.md'));
  await expectBlocked(t, b, 'c8', 2);
});

t.test('rule 10: an artifact changed while the gate runs blocks', async (t) => {
  let b: TestBridge | null = null;
  const gate: FinishLineGate = async () => {
    await writeFile(join(b!.t.artifactRoot, 'proof/proof.json'), 'swapped mid-gate\n');
    return [];
  };
  b = await setup(t, { finishLine: gate, runId: 'c9' });
  await drive(b, 'c9');
  await expectBlocked(t, b, 'c9', 1);
});

t.test('a problem the structural rules and the gate both report is listed once', async (t) => {
  // The real gate's validator child runs the structural rules again (runFinishLine).
  const b = await setup(t, { runId: 'c10d', finishLine: async (facts) => structuralProblems(facts) });
  await drive(b, 'c10d', { omitNode: ['live-smoke'] });
  const { r } = await expectBlocked(t, b, 'c10d', 2);
  t.equal(new Set(r.body['problems']).size, 2, JSON.stringify(r.body['problems']));
});

t.test('the content-validator seam: a gate problem blocks, an empty verdict completes', async (t) => {
  let verdict: string[] = ['proof/proof.json is not harness.proof.v1'];
  const seen: string[] = [];
  const b = await setup(t, {
    runId: 'c10',
    finishLine: async (facts) => {
      seen.push(facts.runId);
      return verdict;
    },
  });
  await drive(b, 'c10');
  const { r } = await expectBlocked(t, b, 'c10', 1);
  t.same(r.body['problems'], verdict);
  verdict = [];
  t.equal((await b.req('POST', '/runs/c10/events', completion())).status, 201);
  t.ok(seen.includes('c10'), 'the gate saw the run');
});

t.test('skipped nodes with reasons and adapter-narrowed nodes do not block', async (t) => {
  const b = await setup(t);
  await drive(b, 'c11', { skip: ['cloud-platform', 'live-smoke'] });
  const done = await b.req('POST', '/runs/c11/events', completion());
  t.equal(done.status, 201, JSON.stringify(done.body));
  t.equal(done.body['run'].status, 'completed');

  await writeFile(
    join(b.t.repo, 'narrow-adapter.json'),
    JSON.stringify({ runtime: { requiredNodes: ['prove', 'handoff'] } }),
  );
  const first = await b.req(
    'POST',
    '/runs/c11n/events',
    ev({ artifactRoot: b.t.artifactRoot, adapterPath: join(b.t.repo, 'narrow-adapter.json') }),
  );
  t.equal(first.status, 201, JSON.stringify(first.body));
  await expectBlocked(t, b, 'c11n', 4);
  for (const nodeId of ['prove', 'handoff'] as const) {
    await b.req(
      'POST',
      '/runs/c11n/events',
      ev({ type: 'artifact.written', nodeId, artifact: DEFAULT_ARTIFACT_BY_NODE[nodeId] }),
    );
    await b.req(
      'POST',
      '/runs/c11n/events',
      ev({ type: 'gate.fired', nodeId, nodeState: 'passed', status: 'passed' }),
    );
  }
  t.equal((await b.req('POST', '/runs/c11n/events', completion())).status, 201);
});

t.test('a completed run is closed', async (t) => {
  const b = await setup(t);
  await drive(b, 'c12');
  const done = await b.req('POST', '/runs/c12/events', completion({ id: 'the-completion' }));
  t.equal(done.status, 201);
  t.equal(done.body['run'].status, 'completed');
  const human = { 'x-harness-human-token': b.t.env['HARNESS_HUMAN_APPROVAL_TOKEN']! };
  for (const body of [
    ev(),
    completion(),
    ev({ type: 'run.blocked', status: 'blocked' }),
    ev({ type: 'approval.requested', status: 'needs_approval', approvalOwner: 'o', approvalScope: 's' }),
  ]) {
    await expectRejected(
      t,
      b,
      'c12',
      () => b.req('POST', '/runs/c12/events', body, human),
      409,
      'run_closed',
    );
  }
  // An idempotent repeat of the completion is still answered as the duplicate it is.
  const dup = await b.req('POST', '/runs/c12/events', completion({ id: 'the-completion' }));
  t.equal(dup.status, 200);
  t.equal(dup.body['duplicate'], true);
  const view = await b.req('GET', '/runs/c12');
  t.equal(view.body['run'].status, 'completed');
  t.equal(view.body['run'].completionPreview.ready, true);
});

t.test('a replay run records its block with a replay source', async (t) => {
  const b = await setup(t);
  await drive(b, 'c13', { omitNode: ['intake'] }, { runMode: 'replay', eventSource: 'local-jsonl' });
  const { blocked } = await expectBlocked(t, b, 'c13', 2, { runMode: 'replay', eventSource: 'local-jsonl' });
  t.equal(blocked.event.runMode, 'replay');
  t.equal(blocked.event.eventSource, 'local-jsonl');
});

t.test('a refused completion is answered only once its run.blocked record is durable', async (t) => {
  const b = await setup(t);
  await drive(b, 'c-durable', { omitNode: ['live-smoke'] });
  // Every commit.log write is held back 200 ms: an answer sent before the record's write returns
  // would arrive while commit.log still lacks it.
  const logFile = await realpath(join(b.t.dataDir, COMMIT_LOG_FILE));
  patchFs(t, {
    write:
      (original) =>
      (fd, ...rest) => {
        const go = () => original(fd, ...rest);
        if (pathOfFd(fd as number) === logFile) setTimeout(go, 200);
        else go();
      },
  });
  const before = await b.journal('c-durable');
  const r = await b.req('POST', '/runs/c-durable/events', completion({ id: 'done-durable' }));
  const log = readFileSync(logFile, 'utf8');
  t.equal(r.status, 409);
  t.equal(r.body['error'], 'finish_line_blocked');
  t.match(
    log,
    /^c-durable \{.*"type":"run\.blocked"/m,
    'commit.log held the run.blocked record at the answer',
  );
  const after = await b.journal('c-durable');
  t.ok(after.subarray(0, before.length).equals(before), 'earlier records untouched');
  const added = records(after.subarray(before.length));
  t.equal(added.length, 1, 'one record added');
  t.match(added[0]?.event, { type: 'run.blocked' }, 'the block');
});
