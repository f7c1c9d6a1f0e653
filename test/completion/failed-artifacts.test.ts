import { readFile, rm, writeFile } from 'node:fs/promises';
import t, { type Test } from 'tap';
import { runPaths } from '../../src/storage/paths.js';
import { readSealed, writeSealed } from '../../src/storage/sealed-file.js';
import { factsFromView } from '../../src/validators/facts-from-view.js';
import { requiredArtifacts } from '../../src/validators/required-artifacts.js';
import { cleanup, ev, makeTestEnv, startTestBridge, type TestBridge } from '../helpers/bridge.js';
import { complete, driveToReady, expectBlocked } from '../helpers/complete-run.js';
import { expectRejected } from '../helpers/expect.js';

/**
 * SPEC completion rule 2 and Errors 4: every required artifact is present, verified, not failed and
 * not skipped without a reason. An artifact.written with status `failed` records the artifact as
 * failed (the run view shows it) and blocks run.completed until a later, non-failed write of the
 * same path; `skipped` carries its mandatory reason. Snapshots derived before artifacts carried an
 * outcome are authenticated, then rebuilt from the journal, never trusted to mean "verified".
 */
const PROOF = 'proof/proof.json';
const failedWrite = ev({
  type: 'artifact.written',
  nodeId: 'prove',
  artifact: PROOF,
  status: 'failed',
  failureReason: 'the proof command exited 1',
  recoveryPath: 'fix the failing test and rerun the proof',
});
const artifactOf = async (b: TestBridge, runId: string, path: string) => {
  const run = (await b.req('GET', `/runs/${runId}`)).body['run'];
  return { run, artifact: run.artifacts.find((a: { path: string }) => a.path === path) };
};

/** The run view's `artifactVerified` of the prove node. */
const prove = (run: { nodes: { id: string; artifactVerified: boolean }[] }) =>
  run.nodes.find((n) => n.id === 'prove')?.artifactVerified;

async function started(t: Test): Promise<TestBridge> {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  return b;
}

t.test('an artifact reported failed blocks completion until a later good write', async (t) => {
  const b = await started(t);
  await driveToReady(b, 'fa');
  t.equal((await b.req('POST', '/runs/fa/events', failedWrite)).status, 201);
  const { run, artifact } = await artifactOf(b, 'fa', PROOF);
  t.match(artifact, {
    outcome: 'failed',
    failureReason: 'the proof command exited 1',
    recoveryPath: 'fix the failing test and rerun the proof',
    skipReason: null,
  });
  t.equal(prove(run), false, 'the node view agrees: a failed artifact is not verified');
  t.equal(run.completionPreview.ready, false);
  const problem = /^required artifact proof\/proof\.json of node prove was reported failed/;
  t.match(run.completionPreview.problems, [problem]);
  t.match(
    requiredArtifacts(factsFromView(run, null)),
    [{ kind: 'artifact-failed', nodeId: 'prove', path: PROOF, text: problem }],
    'explain and MCP (facts from the view) agree',
  );

  const { r } = await expectBlocked(t, b, 'fa', 1);
  t.match(r.body['problems'], [problem], 'the one failing check is the failed artifact');

  // A verified, non-failed write of the same path clears it.
  const good = ev({ type: 'artifact.written', nodeId: 'prove', artifact: PROOF });
  t.equal((await b.req('POST', '/runs/fa/events', good)).status, 201);
  const cleared = await artifactOf(b, 'fa', PROOF);
  t.match(cleared.artifact, { outcome: 'verified', failureReason: null });
  t.equal(prove(cleared.run), true, 'and verified again after the good write');
  t.equal((await complete(b, 'fa')).status, 201);
});

t.test('an artifact skipped with its reason is recorded and does not block', async (t) => {
  const b = await started(t);
  await driveToReady(b, 'fs');
  const skipped = { ...failedWrite, status: 'skipped', failureReason: undefined, recoveryPath: undefined };
  await expectRejected(
    t,
    b,
    'fs',
    () => b.req('POST', '/runs/fs/events', skipped),
    400,
    'event_contract_violation',
  );
  const r = await b.req('POST', '/runs/fs/events', { ...skipped, skipReason: 'proof reused from run 41' });
  t.equal(r.status, 201, JSON.stringify(r.body));
  const got = await artifactOf(b, 'fs', PROOF);
  t.match(got.artifact, { outcome: 'skipped', skipReason: 'proof reused from run 41' });
  t.equal(prove(got.run), true, 'a skipped artifact (with its reason) was verified');
  t.equal((await complete(b, 'fs')).status, 201);
});

t.test('a snapshot written before artifacts carried an outcome is rebuilt from the journal', async (t) => {
  const te = await makeTestEnv();
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  const b = await startTestBridge(te);
  await driveToReady(b, 'fo');
  t.equal((await b.req('POST', '/runs/fo/events', failedWrite)).status, 201);
  await b.close(); // writes run.json
  const key = Buffer.from(te.env['HARNESS_BRIDGE_INTEGRITY_KEY']!, 'utf8');
  const path = runPaths(te.dataDir, 'fo').snapshot;
  const { mac: _, ...current } = JSON.parse(await readFile(path, 'utf8'));
  t.equal(current['schema'], 'harness.snapshot.v2');
  // What older code derived and sealed: the same prefix, artifacts without an outcome.
  const state = structuredClone(current['state']);
  for (const a of Object.values<Record<string, unknown>>(state.artifacts)) {
    for (const field of ['outcome', 'failureReason', 'recoveryPath', 'skipReason']) delete a[field];
  }
  const v1: Record<string, any> = { ...current, schema: 'harness.snapshot.v1', state };
  await writeSealed(path, key, 'harness.snapshot.v1', v1, 1 << 24);

  t.test('an authentic v1 snapshot: the failure is replayed from the journal', async (t) => {
    const b2 = await startTestBridge(te);
    const { run, artifact } = await artifactOf(b2, 'fo', PROOF);
    t.equal(run.status, 'running', 'not quarantined');
    t.match(artifact, { outcome: 'failed' });
    t.equal(run.completionPreview.ready, false);
    // Still refused: one failing check, and only the run.blocked record appended.
    await expectBlocked(t, b2, 'fo', 1);
    await b2.close();
    const rewritten = await readSealed<Record<string, any>>(path, key, 'harness.snapshot.v2', 1 << 24);
    t.equal(rewritten['schema'], 'harness.snapshot.v2', 'a current snapshot replaces it');
  });

  t.test('a v1 snapshot is still authenticated and bound to the journal', async (t) => {
    await writeSealed(path, key, 'harness.snapshot.v1', { ...v1, count: v1['count'] + 100 }, 1 << 24);
    const ahead = await startTestBridge(te);
    t.equal((await ahead.req('GET', '/runs/fo')).body['run'].status, 'quarantined', 'ahead of the journal');
    await ahead.close();
    // An authentic v1 file edited afterwards authenticates under neither schema.
    await writeSealed(path, key, 'harness.snapshot.v1', v1, 1 << 24);
    const forged = JSON.parse(await readFile(path, 'utf8'));
    forged.state.artifacts[PROOF].sha256 = '0'.repeat(64);
    await writeFile(path, JSON.stringify(forged));
    const b3 = await startTestBridge(te);
    t.teardown(() => b3.close());
    t.equal((await b3.req('GET', '/runs/fo')).body['run'].status, 'quarantined', 'a forged v1 file');
  });
});
