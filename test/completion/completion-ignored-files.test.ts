import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { commissionedRun, driveToCompletion } from '../helpers/commissioned-run.js';
import { complete, expectBlocked } from '../helpers/complete-run.js';
import type { Fixture } from '../helpers/finish-line-fixture.js';

/**
 * Issue 28 item 8 through the bridge and the real tools: `harness proof run` records the ignored
 * files it ran with; a dependency under `node_modules/` (ignored, loaded by tracked code) rewritten
 * after the proof refuses run.completed with a problem naming it and leaves the journal as it was
 * but for the run.blocked record; a build cache the adapter lists under `ignoredMayChange` may
 * change and the run completes. Both are completion-time rules: once completed, the run's reads
 * do not list the ignored files again.
 */
const DEP = 'node_modules/dep/index.js';
const CACHE = 'node_modules/.cache/build/a.bin';

async function withDependencies(f: Fixture) {
  for (const [path, text] of [
    [DEP, 'module.exports = 1;\n'],
    [CACHE, 'cache 1\n'],
  ] as const) {
    await mkdir(join(f.repo, path, '..'), { recursive: true });
    await writeFile(join(f.repo, path), text);
  }
}

const options = {
  beforeProof: withDependencies,
  assurance: { ignoredMayChange: ['node_modules/.cache/**'] },
};

t.test('a dependency rewritten after the proof refuses run.completed, naming it', async (t) => {
  const c = await commissionedRun(t, options);
  const listing = JSON.parse(await readFile(join(c.f.root, 'proof/ignored-files.json'), 'utf8'));
  t.same(
    listing.files.map((f: { path: string }) => f.path),
    [CACHE, DEP],
    'harness proof run recorded the ignored files',
  );
  await driveToCompletion(c);
  await writeFile(join(c.f.repo, DEP), 'module.exports = 2; // after the proof\n');
  const { r } = await expectBlocked(t, c.b, c.f.runId, 1);
  t.same(r.body.problems, [`post-proof-mutation: ignored files changed after proof at ${c.head}: ${DEP}`]);
});

t.test("a build cache on the adapter's ignoredMayChange list may change", async (t) => {
  const c = await commissionedRun(t, options);
  await driveToCompletion(c);
  await writeFile(join(c.f.repo, CACHE), 'cache 2\n');
  const done = await complete(c.b, c.f.runId);
  t.equal(done.status, 201, JSON.stringify(done.body));
  const view = await c.b.req('GET', `/runs/${c.f.runId}`);
  t.equal(view.body.run.status, 'completed');
  t.same(
    view.body.run.adapter.ignoredMayChange,
    ['node_modules/.cache/**'],
    'the view shows the sealed list',
  );
  // After completion the dependency changes: further work, which a completed run's reads do not
  // compare with the proof (test/completed-run-further-work.test.ts).
  await writeFile(join(c.f.repo, DEP), 'module.exports = 3;\n');
  const after = await c.b.req('GET', `/runs/${c.f.runId}`);
  t.equal(after.body.run.status, 'completed');
});
