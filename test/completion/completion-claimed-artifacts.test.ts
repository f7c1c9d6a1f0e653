import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';
import { complete, driveToReady, expectBlocked } from '../helpers/complete-run.js';
import { writeArtifact } from '../helpers/expect.js';

/**
 * SPEC completion rule 10 and "the bridge does not return a stale complete state": the gate
 * re-hashes every artifact the journal claims (latest claim per path), the same set completed-run
 * reads re-hash, so a drifted claim blocks the completion instead of completing it and
 * quarantining it on the next read.
 */
t.test('a claimed self-heal proposal that drifted blocks run.completed', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'h1');
  const proposal = '{"schema":"harness.self-heal-proposal.v1"}';
  await writeArtifact(b.t.artifactRoot, 'self_heal/pr.json', proposal);
  const proposed = ev({ type: 'self_heal.pr_proposed', nodeId: 'self-heal', artifact: 'self_heal/pr.json' });
  t.equal((await b.req('POST', '/runs/h1/events', proposed)).status, 201);
  await writeFile(join(b.t.artifactRoot, 'self_heal/pr.json'), '{"schema":"edited"}');
  const { r } = await expectBlocked(t, b, 'h1', 1);
  t.same(r.body.problems, ['artifact self_heal/pr.json changed since it was verified']);

  await writeFile(join(b.t.artifactRoot, 'self_heal/pr.json'), proposal);
  t.equal((await complete(b, 'h1')).status, 201, 'restored to its claimed bytes, the run completes');
  t.equal((await b.req('GET', '/runs/h1')).body.run.status, 'completed', 'and the read agrees');
});

t.test("a non-required node's claimed artifact that drifted blocks run.completed", async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const adapterPath = join(b.t.repo, 'narrow-adapter.json');
  await writeFile(adapterPath, JSON.stringify({ runtime: { requiredNodes: ['prove', 'handoff'] } }));
  const created = await b.req('POST', '/runs', { id: 'h2', artifactRoot: b.t.artifactRoot, adapterPath });
  t.equal(created.status, 201, JSON.stringify(created.body));
  await driveToReady(b, 'h2');
  await writeFile(join(b.t.artifactRoot, 'qa/break-it-results.md'), 'edited after the claim\n');
  const { r } = await expectBlocked(t, b, 'h2', 1);
  t.same(r.body.problems, ['artifact qa/break-it-results.md changed since it was verified']);
});

t.test(
  'a claimed artifact removed before run.completed cannot be re-verified: the completion is blocked',
  async (t) => {
    const b = await startTestBridge(undefined, { finishLine: async () => [] });
    t.teardown(() => cleanup(b));
    await driveToReady(b, 'h3');
    await rm(join(b.t.artifactRoot, 'run/intake.json'));
    const { r } = await expectBlocked(t, b, 'h3', 1);
    t.same(r.body.problems, [
      'artifact run/intake.json cannot be re-verified: run/intake.json does not exist',
    ]);
  },
);
