import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import type { FinishLineGate } from '../../src/server/context.js';
import { createFinishLineGate } from '../../src/validators/runner.js';
import { cleanup, ev, startTestBridge, type TestBridge } from '../helpers/bridge.js';
import { expectBlocked } from '../helpers/complete-run.js';
import { writeArtifact } from '../helpers/expect.js';

/**
 * SPEC completion rule 10, the A-B-A swap: the gate hashes the claimed proof, the validator child
 * reads it, the gate hashes it again. An agent that swaps a passing proof in only for the child's
 * read, and puts the claimed failing bytes back before the second hash, shows the two hashes the
 * same bytes. The swap is made here by the gate seam itself (the real validator child wrapped),
 * so it lands between the two hashes every time: no timing.
 */
const TS = '2025-01-01T00:00:00.000Z';
const PROOF = 'proof/proof.json';
const proof = (runId: string, ok: boolean) =>
  `${JSON.stringify({
    schema: 'harness.proof.v1',
    generatedAt: TS,
    runId,
    status: ok ? 'passed' : 'failed',
    summary: ok ? 'tests pass' : 'tests fail',
    commands: [
      {
        command: 'npm test',
        exitCode: ok ? 0 : 1,
        startedAt: TS,
        completedAt: TS,
        outputDigest: `sha256:${'a'.repeat(64)}`,
      },
    ],
  })}\n`;

/** The real validator child, with `around` run just before it starts and just after it ends. */
function swappingGate(around: { before(): Promise<void>; after(): Promise<void> }): FinishLineGate {
  const real = createFinishLineGate({ concurrency: 1, deadlineMs: 60_000 });
  return async (facts, env) => {
    await around.before();
    try {
      return await real(facts, env);
    } finally {
      await around.after();
    }
  };
}

/** A run requiring only prove and handoff, both written, claimed and passed. */
async function readyRun(b: TestBridge, runId: string, proofText: string): Promise<void> {
  const adapterPath = join(b.t.repo, 'narrow-adapter.json');
  await writeFile(adapterPath, JSON.stringify({ runtime: { requiredNodes: ['prove', 'handoff'] } }));
  const created = await b.req('POST', '/runs', { id: runId, artifactRoot: b.t.artifactRoot, adapterPath });
  if (created.status !== 201) throw new Error(JSON.stringify(created.body));
  await writeArtifact(b.t.artifactRoot, PROOF, proofText);
  await writeArtifact(b.t.artifactRoot, 'handoff/final.md', 'done\n');
  for (const [nodeId, artifact] of [
    ['prove', PROOF],
    ['handoff', 'handoff/final.md'],
  ] as const) {
    for (const body of [
      ev({ nodeId }),
      ev({ type: 'artifact.written', nodeId, artifact }),
      ev({ type: 'gate.fired', nodeId, nodeState: 'passed', status: 'passed' }),
    ]) {
      const r = await b.req('POST', `/runs/${runId}/events`, body);
      if (r.status !== 201) throw new Error(`${nodeId}: ${JSON.stringify(r.body)}`);
    }
  }
}

/** Replaces the file by rename, as an agent swapping whole files would. */
async function put(path: string, text: string): Promise<void> {
  await writeFile(`${path}.tmp`, text);
  await rename(`${path}.tmp`, path);
}

t.test('a passing proof swapped in only for the validators read blocks run.completed', async (t) => {
  let swaps = 0;
  let path = '';
  const b = await startTestBridge(undefined, {
    finishLine: swappingGate({
      before: async () => {
        swaps++;
        await put(path, proof('aba1', true));
      },
      after: () => put(path, proof('aba1', false)),
    }),
  });
  t.teardown(() => cleanup(b));
  path = join(b.t.artifactRoot, PROOF);
  await readyRun(b, 'aba1', proof('aba1', false));

  const { r } = await expectBlocked(t, b, 'aba1', 2);
  t.equal(swaps, 1, 'the validators ran once, on the swapped bytes');
  t.same(r.body.problems, [
    `proof: ${PROOF} changed while the finish line was being checked`,
    // The secret scan reads it too, in the same child.
    `${PROOF} changed while the finish line was being checked`,
  ]);
});

t.test('the validators decide on the claimed bytes when nothing is swapped', async (t) => {
  const b = await startTestBridge(undefined, {
    finishLine: createFinishLineGate({ concurrency: 1, deadlineMs: 60_000 }),
  });
  t.teardown(() => cleanup(b));
  await readyRun(b, 'aba2', proof('aba2', false));
  const { r } = await expectBlocked(t, b, 'aba2', 2);
  t.same(r.body.problems, [
    `proof: ${PROOF} status is failed, not passed`,
    `proof: ${PROOF} command 0 exited 1, not 0`,
  ]);
});

t.test(
  'a by-name input no event claims is bound too: an invalid layer assessment hidden only from the validators',
  async (t) => {
    // production-readiness reads its assessment whenever the file exists, required or not; nothing
    // claims it in this run. Hidden for the child's read alone, it would look absent, so fine.
    const LAYERS = 'production/layer-assessment.json';
    let path = '';
    const b = await startTestBridge(undefined, {
      finishLine: swappingGate({
        before: () => rename(path, `${path}.hidden`),
        after: () => rename(`${path}.hidden`, path),
      }),
    });
    t.teardown(() => cleanup(b));
    path = join(b.t.artifactRoot, LAYERS);
    await readyRun(b, 'aba3', proof('aba3', true));
    await writeArtifact(b.t.artifactRoot, LAYERS, '{"schema":"not an assessment"}\n');

    const { r } = await expectBlocked(t, b, 'aba3', 2);
    t.same(r.body.problems, [
      `production-readiness: ${LAYERS} changed while the finish line was being checked`,
      `${LAYERS} changed while the finish line was being checked`,
    ]);
  },
);

t.test('a by-name input that appears only after the validators ran blocks run.completed', async (t) => {
  // Absent at the first pass (so the validators were told it is absent), written while they ran.
  const LAYERS = 'production/layer-assessment.json';
  let root = '';
  const b = await startTestBridge(undefined, {
    finishLine: swappingGate({
      before: async () => {},
      after: async () => {
        await writeArtifact(root, LAYERS, '{"schema":"not an assessment"}\n');
      },
    }),
  });
  t.teardown(() => cleanup(b));
  root = b.t.artifactRoot;
  await readyRun(b, 'aba4', proof('aba4', true));

  const { r } = await expectBlocked(t, b, 'aba4', 1);
  t.same(r.body.problems, [`artifact ${LAYERS} changed during the finish-line checks`]);
});
