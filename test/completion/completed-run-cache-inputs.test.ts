import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import t, { type Test } from 'tap';
import { DEFAULT_ARTIFACT_BY_NODE, NODE_IDS } from '../../src/contract/index.js';
import type { FinishLineGate } from '../../src/server/context.js';
import { productionReadiness } from '../../src/validators/production-readiness.js';
import { cleanup, ev, gitIn, startTestBridge, type TestBridge } from '../helpers/bridge.js';
import { writeArtifact } from '../helpers/expect.js';

/**
 * SPEC: the completed-run verdict cache never affects the trust decision. For a run whose
 * validators do not enumerate the artifact root (an ordinary run), the key binds exactly the files
 * they read by name, present or absent, and the completion seals them too: one of those appearing
 * after a cached read is drift, while a file no validator reads is not an input and is answered
 * from the cache (no walk of the root on every read). The gate here is the real production-readiness rule, which reads its
 * assessment whenever the file exists, even with the node skipped (so it is never claimed).
 */
const ASSESSMENT = DEFAULT_ARTIFACT_BY_NODE['production-readiness'];
const gate: FinishLineGate = async (facts, env) =>
  (await productionReadiness(facts, env)).map((p) => `production-readiness: ${p}`);

async function completedRun(t: Test): Promise<{ b: TestBridge; runId: string }> {
  const b = await startTestBridge(undefined, { finishLine: gate });
  t.teardown(() => cleanup(b));
  const runId = 'cache-inputs';
  const post = async (body: Record<string, unknown>) => {
    const r = await b.req('POST', `/runs/${runId}/events`, body);
    t.equal(r.status, 201, `${body['type']} ${body['nodeId']}: ${JSON.stringify(r.body)}`);
  };
  await post(ev({ type: 'run.created', artifactRoot: b.t.artifactRoot }));
  for (const nodeId of NODE_IDS) {
    if (nodeId === 'production-readiness') {
      await post(ev({ type: 'node.skipped', nodeId, status: 'skipped', skipReason: 'a library' }));
      continue;
    }
    const path = DEFAULT_ARTIFACT_BY_NODE[nodeId];
    await mkdir(dirname(join(b.t.artifactRoot, path)), { recursive: true });
    await writeFile(join(b.t.artifactRoot, path), `artifact of ${nodeId}\n`);
    await post(ev({ nodeId }));
    await post(ev({ type: 'artifact.written', nodeId, artifact: path }));
    await post(ev({ type: 'gate.fired', nodeId, nodeState: 'passed', status: 'passed' }));
  }
  await post(ev({ type: 'run.completed', nodeId: 'handoff', status: 'passed' }));
  for (let i = 0; i < 2; i++) {
    t.equal((await b.req('GET', `/runs/${runId}`)).body.run.status, 'completed', `read ${i + 1}`);
  }
  t.ok((await b.req('GET', '/health')).body.cache.hits >= 1, 'the second read was a cache hit');
  return { b, runId };
}

t.test(
  'a file a validator reads by name, added after a cached read, is drift before any verdict',
  async (t) => {
    const { b, runId } = await completedRun(t);
    const before = (await b.req('GET', '/health')).body.cache;
    await writeArtifact(b.t.artifactRoot, ASSESSMENT, '{"schema":"harness.production-readiness.v2"}');
    const got = await b.req('GET', `/runs/${runId}`);
    t.equal(got.body.run.status, 'quarantined');
    // The completion sealed the input as absent: its appearance is drift, whatever a verdict says.
    t.same(got.body.run.quarantine.reasons, [`finish-line document ${ASSESSMENT} appeared after completion`]);
    const after = (await b.req('GET', '/health')).body.cache;
    t.same(after, before, 'decided by the seal: neither a cache hit nor a validator run');
  },
);

t.test('a file no validator reads, added after a cached read, is answered from the cache', async (t) => {
  const { b, runId } = await completedRun(t);
  const before = (await b.req('GET', '/health')).body.cache;
  await writeArtifact(b.t.artifactRoot, 'notes/x.md', 'not an input of an ordinary run\n');
  await writeArtifact(b.t.artifactRoot, 'run/notes.md', 'beside an input, still not one\n');
  t.equal((await b.req('GET', `/runs/${runId}`)).body.run.status, 'completed');
  const after = (await b.req('GET', '/health')).body.cache;
  t.same(after, { executions: before.executions, hits: before.hits + 1 }, 'a cache hit');
});

t.test('a run whose rules read no repository state is answered from the cache after a commit', async (t) => {
  // Not commissioned and without an RCA: no rule of this run runs git, so no git runs for its key.
  const { b, runId } = await completedRun(t);
  const before = (await b.req('GET', '/health')).body.cache;
  const git = gitIn(b.t.repo);
  await writeFile(join(b.t.repo, 'app.js'), 'export const x = 1;\n');
  await git('add', 'app.js');
  await git('commit', '-q', '-m', 'an application change');
  await writeFile(join(b.t.repo, 'app.js'), 'export const x = 2;\n');
  await writeFile(join(b.t.repo, 'untracked.js'), 'export const y = 1;\n');
  t.equal((await b.req('GET', `/runs/${runId}`)).body.run.status, 'completed');
  const after = (await b.req('GET', '/health')).body.cache;
  t.same(after, { executions: before.executions, hits: before.hits + 1 }, 'a cache hit');
});
