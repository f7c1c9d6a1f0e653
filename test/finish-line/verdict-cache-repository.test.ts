import { appendFile, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { repositoryState } from '../../src/server/verdict-inputs.js';
import { validatorInputs } from '../../src/validators/finish-line.js';
import { documentRefsHere } from '../../src/workers/document-refs.js';
import { buildFixture, type Fixture } from '../helpers/finish-line-fixture.js';

/**
 * What the verdict cache key binds of the git repository (verdict-inputs.ts repositoryState), one
 * kind of read at a time: each change a rule's git query could see moves it, and a change that
 * query cannot see does not.
 */
const none = { trustStore: false, workingTree: false, commitsNamedIn: [] as string[] };
const state = (f: Fixture, reads: Partial<typeof none>) =>
  repositoryState(f.repo, f.root, { ...none, ...reads }, documentRefsHere);

t.test(
  'the trust store at HEAD: a committed revocation moves it, an unrelated commit does not',
  async (t) => {
    const f = await buildFixture(t);
    const before = await state(f, { trustStore: true });
    await writeFile(join(f.repo, 'other.js'), 'export const o = 1;\n');
    await f.git('add', 'other.js');
    await f.git('commit', '-q', '-m', 'unrelated');
    await writeFile(join(f.repo, 'controls/review-trust.v1.json'), '{"edited":"not committed"}');
    t.same(await state(f, { trustStore: true }), before, 'only the committed store is read');
    await f.git('checkout', '--', 'controls/review-trust.v1.json');
    const path = join(f.repo, 'controls/review-trust.v1.json');
    const doc = JSON.parse(await readFile(path, 'utf8'));
    doc.keys[0].status = 'revoked';
    await writeFile(path, JSON.stringify(doc));
    await f.git('commit', '-q', '-am', 'revoke');
    t.not((await state(f, { trustStore: true })).join('\n'), before.join('\n'));
  },
);

t.test('the working tree: every change outside the artifact root moves it', async (t) => {
  const f = await buildFixture(t);
  const seen = [await state(f, { workingTree: true })];
  await writeFile(join(f.root, 'notes.md'), 'under the artifact root');
  t.same(await state(f, { workingTree: true }), seen[0], 'the artifact root is left out');
  await appendFile(join(f.repo, 'app.js'), '// one\n');
  seen.push(await state(f, { workingTree: true }));
  await appendFile(join(f.repo, 'app.js'), '// two: the status line stays the same\n');
  seen.push(await state(f, { workingTree: true }));
  await writeFile(join(f.repo, 'new.js'), 'untracked\n');
  seen.push(await state(f, { workingTree: true }));
  await f.git('add', '-A', '.', ':(exclude)artifacts');
  await f.git('commit', '-q', '-m', 'commit them');
  seen.push(await state(f, { workingTree: true }));
  t.equal(new Set(seen.map((l) => l.join('\n'))).size, seen.length, 'every step is a new binding');
});

t.test(
  'the commits an RCA names: a lost commit moves it, a replace ref is not seen; no RCA, no git',
  async (t) => {
    const f = await buildFixture(t, { commissioned: false });
    const reads = validatorInputs(f.facts).repository;
    t.same(reads, { trustStore: false, workingTree: false, commitsNamedIn: ['rca/rca.json'] });
    const before = await repositoryState(f.repo, f.root, reads, documentRefsHere);
    t.match(before, [/^ancestor /, /^ancestor /, /^commit .* present$/, /^commit .* present$/]);
    // Replace objects are off for every git call: the rule and the key see the commits as named.
    await f.git('replace', '--graft', f.postFix);
    t.same(await repositoryState(f.repo, f.root, reads, documentRefsHere), before, 'a graft changes neither');
    const loose = join(f.repo, '.git/objects', f.postFix.slice(0, 2), f.postFix.slice(2));
    await rm(loose);
    t.not((await repositoryState(f.repo, f.root, reads, documentRefsHere)).join('\n'), before.join('\n'));
    const plain = await buildFixture(t, { commissioned: false, corrective: false });
    t.same(
      await repositoryState(
        '/nonexistent',
        plain.root,
        validatorInputs(plain.facts).repository,
        documentRefsHere,
      ),
      [],
    );
  },
);
