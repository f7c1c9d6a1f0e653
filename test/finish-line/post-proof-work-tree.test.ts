import { cp, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { repositoryState } from '../../src/server/verdict-inputs.js';
import { changesSince } from '../../src/validators/git.js';
import { documentRefsHere } from '../../src/workers/document-refs.js';
import { buildFixture, failing } from '../helpers/finish-line-fixture.js';

/**
 * The post-proof comparison looks at HARNESS_REPO_ROOT's own files. `core.worktree` in the
 * agent-written config would point git at another directory (a pristine copy), and `core.bare`
 * would make it see no work tree at all.
 */
const EVIL = 'export const add = () => 4; // changed after the proof\n';
const reads = { trustStore: false, workingTree: true, commitsNamedIn: [] as string[] };

t.test('core.worktree pointing at a pristine copy does not hide an edit', async (t) => {
  const f = await buildFixture(t);
  const pristine = join(f.repo, '..', 'pristine');
  await cp(f.repo, pristine, { recursive: true, filter: (src) => !src.endsWith('/.git') });
  await writeFile(join(f.repo, 'app.js'), EVIL);
  await f.git('config', 'core.worktree', pristine);
  t.equal(await f.git('status', '--porcelain', '--', 'app.js'), '', 'control: plain git sees no change');
  t.same(failing(await f.run()), ['post-proof-mutation']);
  t.same(await changesSince(f.repo, f.postFix, 'artifacts'), ['app.js']);
});

t.test('core.bare does not hide the work tree', async (t) => {
  const f = await buildFixture(t);
  await writeFile(join(f.repo, 'app.js'), EVIL);
  await f.git('config', 'core.bare', 'true');
  t.same(failing(await f.run()), ['post-proof-mutation']);
});

t.test('HARNESS_REPO_ROOT in a subdirectory: its part of the tree, named from the top', async (t) => {
  const f = await buildFixture(t);
  const sub = join(f.repo, 'pkg');
  await mkdir(sub);
  await writeFile(join(sub, 'lib.js'), 'export const x = 1;\n');
  await f.git('add', 'pkg');
  await f.git('commit', '-q', '-m', 'pkg');
  const head = await f.git('rev-parse', 'HEAD');
  await writeFile(join(f.repo, 'app.js'), EVIL);
  t.same(await changesSince(sub, head, null), [], 'a change outside the subdirectory is not its own');
  await writeFile(join(sub, 'lib.js'), 'export const x = 2;\n');
  await writeFile(join(sub, 'new.js'), 'new\n');
  t.same((await changesSince(sub, head, null))?.sort(), ['pkg/lib.js', 'pkg/new.js']);
  // A second edit of a file already changed keeps its status line: its identity must move the key.
  const before = await repositoryState(sub, f.root, reads, documentRefsHere);
  t.match(before.join('\n'), /changed "pkg\/lib\.js" f /, 'bound at its path under the top level');
  await writeFile(join(sub, 'lib.js'), 'export const x = 3; // and again\n');
  t.not((await repositoryState(sub, f.root, reads, documentRefsHere)).join('\n'), before.join('\n'));
});

t.test(
  'a tracked file under the artifact root is compared; only untracked files there are left out',
  async (t) => {
    const f = await buildFixture(t, { corrective: false });
    // Application code inside the directory the agent names as its artifact root, proven there.
    await writeFile(join(f.root, 'lib.js'), 'export const mul = (a, b) => a * b;\n');
    await f.git('add', 'artifacts/lib.js');
    await f.git('commit', '-q', '-m', 'lib');
    const proven = await f.git('rev-parse', 'HEAD');
    await f.mutate(f.facts.config.artifactByNode.prove, (proof) => {
      proof.subject.commit = proven;
    });
    await f.resign();
    await f.repack((packet) => {
      packet.subject.commit = proven;
    });
    t.same(failing(await f.run()), [], 'control: the run passes at the proven commit');
    t.same(await changesSince(f.repo, proven, 'artifacts'), [], 'the untracked artifacts are left out');

    // Changed after the proof, then reviewed and packed as they stand: only the comparison with the
    // proven commit can see it.
    await writeFile(join(f.root, 'lib.js'), 'export const mul = () => 0; // changed after the proof\n');
    await f.resign();
    await f.repack((packet) => {
      packet.subject.commit = proven;
    });
    t.same(await changesSince(f.repo, proven, 'artifacts'), ['artifacts/lib.js']);
    t.same(failing(await f.run()), ['post-proof-mutation']);
    t.match(
      (await f.rule('post-proof-mutation')).join(' '),
      /application changed after proof .*artifacts\/lib\.js/,
    );
    // The verdict cache key binds it as a change too.
    t.match(
      (await repositoryState(f.repo, f.root, reads, documentRefsHere)).join('\n'),
      /changed "artifacts\/lib\.js" /,
    );
  },
);

t.test('at a completed-run read the proven commit must exist; the work tree is not compared', async (t) => {
  const f = await buildFixture(t);
  f.env.stage = 'read';
  await writeFile(join(f.repo, 'app.js'), EVIL);
  await writeFile(join(f.repo, 'new.js'), 'new\n');
  await mkdir(join(f.repo, 'node_modules'));
  await writeFile(join(f.repo, 'node_modules/dep.js'), 'ignored, added after the proof\n');
  t.same(failing(await f.run()), [], 'work after the proof is no mutation of what was proven');
  await rm(join(f.repo, '.git/objects', f.postFix.slice(0, 2), f.postFix.slice(2)));
  const problems = (await f.run()).problems;
  t.ok(
    problems.includes(`post-proof-mutation: proven commit ${f.postFix} no longer exists in the repository`),
    JSON.stringify(problems),
  );
  f.env.stage = 'gate';
  t.ok(
    (await f.run()).problems.includes(
      `post-proof-mutation: the working tree cannot be compared with proven commit ${f.postFix}`,
    ),
    'the gate compares the work tree, and cannot without the commit',
  );
});
