import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { execa } from '#execa';
import { IGNORED_FILES_MAX, IGNORED_FILES_SCHEMA_ID } from '../../src/contract/artifacts/index.js';
import { claimArtifact } from '../../src/validators/artifact-root.js';
import { ignoredListingPath, listIgnoredFiles } from '../../src/validators/ignored-files.js';
import { buildFixture, type Fixture, failing } from '../helpers/finish-line-fixture.js';

/**
 * Issue 28 item 8: the post-proof comparison leaves git-ignored files out, so the proof records
 * them (path and lstat identity) and the comparison names each added, removed or changed since,
 * but for the adapter's `finishLineAssurance.ignoredMayChange` globs.
 */
const put = async (f: Fixture, path: string, text: string) => {
  await mkdir(join(f.repo, path, '..'), { recursive: true });
  await writeFile(join(f.repo, path), text);
};

/** What `harness proof run` does after its command: list the ignored files, bind the listing. */
async function reprove(f: Fixture) {
  const prove = f.facts.config.artifactByNode.prove;
  const listing = ignoredListingPath(prove);
  const files = await listIgnoredFiles(f.repo, f.root);
  await f.write(listing, { schema: IGNORED_FILES_SCHEMA_ID, runId: f.runId, files });
  const sha256 = (await claimArtifact(f.root, listing)).sha256;
  await f.mutate(prove, (proof) => {
    proof.subject.ignored = { path: listing, sha256 };
  });
  await f.resign();
  await f.repack();
}

/** A fixture whose proof ran with node_modules/dep/index.js, a build cache and .env. */
async function proven(t: Test) {
  const f = await buildFixture(t);
  await put(f, 'node_modules/dep/index.js', 'module.exports = 1;\n');
  await put(f, 'node_modules/.cache/build/a.bin', 'cache 1\n');
  await put(f, '.env', 'MODE=test\n');
  await reprove(f);
  t.same((await f.run()).problems, [], 'control: the proven tree passes');
  return f;
}

const changed = (f: Fixture, paths: string) =>
  `post-proof-mutation: ignored files changed after proof at ${f.postFix}: ${paths}`;

t.test('an ignored file edited after the proof is named', async (t) => {
  const f = await proven(t);
  t.same(await f.git('status', '--porcelain', '--', 'node_modules'), '', 'git itself sees no change there');
  await put(f, 'node_modules/dep/index.js', 'module.exports = 2; // after the proof\n');
  const result = await f.run();
  t.same(failing(result), ['post-proof-mutation']);
  t.same(result.problems, [changed(f, 'node_modules/dep/index.js')]);
});

t.test('an ignored file added or removed after the proof is named', async (t) => {
  const f = await proven(t);
  await rm(join(f.repo, '.env'));
  await put(f, 'node_modules/dep/extra.js', 'module.exports = 3;\n');
  t.same((await f.run()).problems, [changed(f, '.env, node_modules/dep/extra.js')]);
});

t.test("a path on the adapter's ignoredMayChange list may change; the rest may not", async (t) => {
  const f = await proven(t);
  f.facts.config.adapter = {
    rootKind: 'artifact-root',
    path: join(f.root, 'project-adapter.json'),
    sha256: '0'.repeat(64),
    finishLineAssurance: true,
    ignoredMayChange: ['node_modules/.cache/**'],
  };
  await put(f, 'node_modules/.cache/build/a.bin', 'cache 2\n');
  await put(f, 'node_modules/.cache/build/b.bin', 'new cache entry\n');
  t.same((await f.run()).problems, [], 'the build cache changed');
  await put(f, 'node_modules/dep/index.js', 'module.exports = 2;\n');
  t.same((await f.run()).problems, [changed(f, 'node_modules/dep/index.js')], 'the dependency did not');
});

t.test('a proof that binds no listing, or another one, cannot complete', async (t) => {
  const f = await proven(t);
  const prove = f.facts.config.artifactByNode.prove;
  const listing = ignoredListingPath(prove);
  await f.write(listing, { schema: IGNORED_FILES_SCHEMA_ID, runId: f.runId, files: [] });
  t.same(
    (await f.rule('post-proof-mutation')).filter((p) => p.includes('ignored files')),
    [
      `post-proof-mutation: the ignored files the proof ran with cannot be read: ${listing} is not the listing the proof binds`,
    ],
  );
  await f.mutate(prove, (proof) => {
    delete proof.subject.ignored;
  });
  t.same(await f.rule('post-proof-mutation'), [
    `post-proof-mutation: ${prove} does not bind the ignored files it ran with (subject.ignored); run harness proof run again`,
  ]);
});

t.test(`past ${IGNORED_FILES_MAX} ignored files the comparison refuses, naming the bound`, async (t) => {
  const f = await buildFixture(t);
  const dir = join(f.repo, 'node_modules', 'many');
  await mkdir(dir, { recursive: true });
  // Empty files, made by one process: 100001 names under an ignored directory.
  await execa('sh', ['-c', `seq 0 ${IGNORED_FILES_MAX} | sed 's/^/f/' | xargs touch`], { cwd: dir });
  t.same(await listIgnoredFiles(f.repo, f.root), { tooMany: IGNORED_FILES_MAX + 1 });
  t.same(await f.rule('post-proof-mutation'), [
    `post-proof-mutation: more than ${IGNORED_FILES_MAX} ignored files outside the artifact root (${IGNORED_FILES_MAX + 1})`,
  ]);
});
