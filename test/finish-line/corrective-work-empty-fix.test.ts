import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { repositoryState } from '../../src/server/verdict-inputs.js';
import { validatorInputs } from '../../src/validators/finish-line.js';
import { documentRefsHere } from '../../src/workers/document-refs.js';
import { buildFixture, type Fixture, failing } from '../helpers/finish-line-fixture.js';

/**
 * SPEC rule 5 (corrective work): the pre-fix phase failed and the post-fix phase passed. When both
 * commits record the same tree the "fix" changed nothing, and the self-reported exit codes cannot
 * both be true of the same code.
 */
async function chainOn(t: Parameters<typeof buildFixture>[0], make: (f: Fixture) => Promise<unknown>) {
  const f = await buildFixture(t, { commissioned: false, corrective: true });
  await f.git('commit', '-q', '--allow-empty', '-m', 'pre');
  const pre = await f.git('rev-parse', 'HEAD');
  await make(f);
  const post = await f.git('rev-parse', 'HEAD');
  await f.mutate('rca/rca.json', (rca) => {
    rca.preFix.commit = pre;
    rca.postFix.commit = post;
  });
  await f.repack((p) => (p.subject.commit = post));
  return { f, pre, post };
}

t.test('two empty commits are refused: the fix changes nothing', async (t) => {
  const { f, post } = await chainOn(t, (f) => f.git('commit', '-q', '--allow-empty', '-m', 'post'));
  const r = await f.run();
  t.same(failing(r), ['corrective-work']);
  t.match(r.problems, [new RegExp(`post-fix commit ${post} changes nothing`)]);
});

t.test('a change and its revert are refused too', async (t) => {
  const { f } = await chainOn(t, async (f) => {
    await writeFile(join(f.repo, 'app.js'), 'export const add = (a, b) => b + a;\n');
    await f.git('commit', '-q', '-am', 'change');
    await f.git('revert', '--no-edit', 'HEAD');
  });
  t.same(failing(await f.run()), ['corrective-work']);
});

t.test('control: a post-fix commit that changes a file passes', async (t) => {
  const { f } = await chainOn(t, async (f) => {
    await writeFile(join(f.repo, 'app.js'), 'export const add = (a, b) => b + a;\n');
    await f.git('commit', '-q', '-am', 'post');
  });
  t.same((await f.run()).problems, []);
  // The tree is fixed by the commit's name (replace objects off): the key's commit lines cover it.
  const reads = validatorInputs(f.facts).repository;
  t.same(reads.commitsNamedIn, ['rca/rca.json']);
  t.match(
    (await repositoryState(f.repo, f.root, reads, documentRefsHere)).join('\n'),
    /^commit .* present$/m,
  );
});
