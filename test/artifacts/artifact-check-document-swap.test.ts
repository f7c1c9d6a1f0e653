import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { DEFAULT_ARTIFACT_BY_NODE, NODE_IDS } from '../../src/contract/index.js';
import { emptyState } from '../../src/contract/run-state.js';
import { checkArtifacts, documentDrift } from '../../src/server/artifact-check.js';
import type { BridgeContext } from '../../src/server/context.js';
import type { OpenRun } from '../../src/storage/types.js';
import { HashPool } from '../../src/workers/pool.js';

/**
 * CONTRACT 6 at the finish line: the paths checked are those the packet named when it was parsed.
 * An agent that swaps the packet between that parse and the pass that hashes it would have the
 * hashed packet name files nobody checked; the check must notice the bytes moved.
 */
const ACCESS = 'A'.repeat(48);
const PACKET = 'run/packet.json';

async function setup(t: Test) {
  const root = await realpath(await mkdtemp(join(tmpdir(), 'harness-docswap-')));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  await mkdir(join(root, 'run'));
  await writeFile(join(root, 'leak.md'), `token: ${ACCESS}\n`);
  await writeFile(join(root, PACKET), JSON.stringify({ note: 'names nothing' }));
  const pool = new HashPool(1);
  t.teardown(() => pool.close());
  const ctx = {
    pool,
    env: { accessToken: ACCESS, humanToken: 'H'.repeat(48), integrityKey: Buffer.from('K'.repeat(48)) },
  } as unknown as BridgeContext;
  const run = {
    runId: 'swap-1',
    config: {
      runId: 'swap-1',
      artifactRoot: root,
      commissioned: false,
      requiredNodes: [...NODE_IDS],
      artifactByNode: { ...DEFAULT_ARTIFACT_BY_NODE },
      adapter: null,
    },
    state: emptyState('swap-1', new Date().toISOString()),
  } as unknown as OpenRun;
  const naming = JSON.stringify({ evidence: { path: 'leak.md', sha256: 'f'.repeat(64) } });
  return { root, pool, ctx, run, naming };
}

t.test('a packet swapped between its parse and its hash is a problem', async (t) => {
  const { root, pool, ctx, run, naming } = await setup(t);
  const parse = pool.documentRefs.bind(pool);
  pool.documentRefs = async (r, paths) => {
    const out = await parse(r, paths);
    await writeFile(join(root, PACKET), naming); // the agent wins the race
    return out;
  };
  const check = await checkArtifacts(ctx, run, 'gate');
  t.notOk(check.digests.has('leak.md'), 'what the hashed packet names was not checked');
  t.ok(
    check.problems.includes(`${PACKET} changed while the finish line was being checked`),
    check.problems.join('\n'),
  );
});

t.test('control: the same packet in place from the start names the leak', async (t) => {
  const { root, ctx, run, naming } = await setup(t);
  await writeFile(join(root, PACKET), naming);
  const check = await checkArtifacts(ctx, run, 'gate');
  t.ok(check.problems.includes('artifact leak.md contains a bridge credential value'));
  t.notOk(
    check.problems.some((p) => p.includes('changed while')),
    check.problems.join('\n'),
  );
});

t.test("a completed run's sealed documents are re-hashed even when no rule reads them now", async (t) => {
  // A run completed under rules that read `extra/doc.json`: its seal holds the document's digest.
  // The rules of this build name no such path; the read must still hash it, or an unchanged
  // document would read as removed, and a changed one would not be named for what it is.
  const { root, ctx, run } = await setup(t);
  await mkdir(join(root, 'extra'));
  await writeFile(join(root, 'extra/doc.json'), '{"v":1}');
  const seal = {
    documents: { 'extra/doc.json': createHash('sha256').update('{"v":1}').digest('hex') },
  };
  run.state.completionSeal = { artifacts: {}, adapterSha256: null, validatorDigest: 'v', ...seal };
  const unchanged = await checkArtifacts(ctx, run, 'read');
  t.ok(unchanged.byName.includes('extra/doc.json'), 'the sealed document is checked by name');
  t.same(documentDrift(seal, unchanged), [], 'an unchanged sealed document is no drift');
  await writeFile(join(root, 'extra/doc.json'), '{"v":2}');
  t.same(documentDrift(seal, await checkArtifacts(ctx, run, 'read')), [
    'finish-line document extra/doc.json changed after completion',
  ]);
});
