import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { repositoryState } from '../src/server/verdict-inputs.js';
import { documentRefsHere } from '../src/workers/document-refs.js';
import { commissionedRun, driveToCompletion } from './helpers/commissioned-run.js';
import { expectBlocked } from './helpers/complete-run.js';
import { buildFixture, type Fixture, failing } from './helpers/finish-line-fixture.js';
import { forgeIndexEntry } from './helpers/forged-index.js';

/**
 * SPEC rule 9 "post-proof application mutation cannot close the run", against an agent that also
 * controls the state git's own comparison trusts: index flags and stat data, replace refs and the
 * local ignore rules. Each trick hides a post-proof change from plain `git status` (the control); the rule must
 * still refuse at the gate, and the working-tree state repositoryState binds must move. (A
 * completed run's read does not compare the working tree: test/completed-run-further-work.test.ts.)
 */
const EVIL = 'export const add = () => 4; // changed after the proof\n';

type Trick = (f: Fixture) => Promise<void>;
const tricks: [string, Trick][] = [
  [
    'skip-worktree on an edited file',
    async (f) => {
      await writeFile(join(f.repo, 'app.js'), EVIL);
      await f.git('update-index', '--skip-worktree', 'app.js');
    },
  ],
  [
    'assume-unchanged on an edited file',
    async (f) => {
      await writeFile(join(f.repo, 'app.js'), EVIL);
      await f.git('update-index', '--assume-unchanged', 'app.js');
    },
  ],
  [
    "an index entry pairing the proven object name with the edited file's stat data",
    async (f) => {
      await writeFile(join(f.repo, 'app.js'), EVIL);
      await forgeIndexEntry(f.repo, 'app.js', await f.git('rev-parse', `${f.postFix}:app.js`), f.git);
    },
  ],
  [
    'a new file hidden by .git/info/exclude',
    async (f) => {
      await writeFile(join(f.repo, 'backdoor.js'), 'x\n');
      await writeFile(join(f.repo, '.git/info/exclude'), 'backdoor.js\n');
    },
  ],
  [
    'a new file hidden by core.excludesFile',
    async (f) => {
      await writeFile(join(f.repo, 'backdoor.js'), 'x\n');
      await writeFile(join(f.repo, '..', 'excludes'), 'backdoor.js\n');
      await f.git('config', 'core.excludesFile', join(f.repo, '..', 'excludes'));
    },
  ],
  [
    'a new file hidden by an untracked .gitignore that ignores itself',
    async (f) => {
      await writeFile(join(f.repo, 'controls', 'backdoor.js'), 'x\n');
      await writeFile(join(f.repo, 'controls', '.gitignore'), '.gitignore\nbackdoor.js\n');
    },
  ],
  [
    'a later commit standing in for the proven one (git replace)',
    async (f) => {
      await writeFile(join(f.repo, 'app.js'), EVIL);
      await f.git('commit', '-q', '-am', 'after proof');
      const standIn = await f.git('commit-tree', 'HEAD^{tree}', '-p', f.preFix, '-m', 'fix add');
      await f.git('replace', f.postFix, standIn);
    },
  ],
];

for (const [name, trick] of tricks) {
  t.test(`${name}: refused, and the cache key moves`, async (t) => {
    const f = await buildFixture(t);
    t.same((await f.run()).problems, [], 'the known-good fixture passes');
    const reads = {
      trustStore: false,
      workingTree: true,
      commitsNamedIn: [f.facts.config.artifactByNode.prove],
    };
    const before = await repositoryState(f.repo, f.root, reads, documentRefsHere);
    await trick(f);
    const plain = [
      await f.git('status', '--porcelain', '--untracked-files=all', '--', '.', ':(exclude)artifacts'),
      await f.git('diff', '--name-only', f.postFix),
    ];
    t.same(plain, ['', ''], 'control: plain git shows no change since the proven commit');
    t.same(failing(await f.run()), ['post-proof-mutation']);
    t.not((await repositoryState(f.repo, f.root, reads, documentRefsHere)).join('\n'), before.join('\n'));
  });
}

t.test('over HTTP: an edit hidden by skip-worktree refuses run.completed', async (t) => {
  const c = await commissionedRun(t);
  await driveToCompletion(c);
  await writeFile(join(c.f.repo, 'app.js'), 'export const add = (a, b) => a - b;\n');
  await c.f.git('update-index', '--skip-worktree', 'app.js');
  t.equal(await c.f.git('status', '--porcelain', '--', 'app.js'), '', 'control: git status shows nothing');
  const { r } = await expectBlocked(t, c.b, c.f.runId, 1);
  t.match(r.body.problems, [/^post-proof-mutation: application changed after proof .*app\.js/]);
});

t.test('a sparse checkout cannot pass: each path outside it is reported', async (t) => {
  const f = await buildFixture(t);
  await f.git('sparse-checkout', 'set', '--no-cone', '/controls/');
  const r = await f.run();
  t.same(failing(r), ['post-proof-mutation']);
  t.match(r.problems.join('\n'), /application changed after proof .*app\.js/);
});
