import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { buildFixture, expectRule, type Fixture, failing } from './helpers/finish-line-fixture.js';

/** SPEC completion rule 9 refusals not covered by their own rule files. */
t.test('external-validation-runtime: the bridge runtime is accepted', async (t) => {
  const f = await buildFixture(t);
  t.same(await f.rule('external-validation-runtime'), []);
});

const external: [string, string, (d: any) => void][] = [
  [
    'a packet naming its own validator',
    'run/packet.json',
    (d) => (d.validation = { runtime: '/tmp/my-validator.js' }),
  ],
  [
    'a review naming a validator command',
    'review/review.json',
    (d) => (d.validatorCommand = 'node /tmp/v.js'),
  ],
  ['a proof naming a validator', 'proof/proof.json', (d) => (d.validator = 'external-ci')],
  ['an rca naming a validation runtime', 'rca/rca.json', (d) => (d.rootCause.validationRuntime = 'x')],
  ['a proof naming a validation path', 'proof/proof.json', (d) => (d.validation_path = '/tmp/v.js')],
  [
    'a packet naming the bridge runtime with a command of its own',
    'run/packet.json',
    (d) => (d.validation = { runtime: 'harness-bridge', command: 'node /tmp/v.js' }),
  ],
];
for (const [name, path, fn] of external) {
  t.test(`external-validation-runtime: ${name} is refused`, async (t) => {
    const f = await buildFixture(t);
    await f.mutate(path, fn);
    await expectRule(
      t,
      f,
      'external-validation-runtime',
      `${path} names a validation runtime outside the bridge`,
      false,
    );
  });
}

t.test('post-proof-mutation: known-good (artifacts untracked inside the repo) passes', async (t) => {
  const f = await buildFixture(t);
  t.same(await f.rule('post-proof-mutation'), []);
});

/** Moves the fixture's artifact root beside the repository, out of git's reach. */
async function rootOutsideRepo(f: Fixture): Promise<void> {
  const outside = join(f.repo, '..', 'artifacts-outside');
  await rename(f.root, outside);
  f.env.realRoot = outside;
  f.facts.config.artifactRoot = outside;
}

t.test('post-proof-mutation: an artifact root outside the repository passes', async (t) => {
  const f = await buildFixture(t);
  await rootOutsideRepo(f);
  t.same(failing(await f.run()), [], 'the whole working tree is compared, and is clean');
});

t.test(
  'post-proof-mutation: with the root outside the repository, an application edit is refused',
  async (t) => {
    const f = await buildFixture(t);
    await rootOutsideRepo(f);
    await writeFile(join(f.repo, 'app.js'), 'export const add = () => 4;\n');
    await expectRule(t, f, 'post-proof-mutation', `application changed after proof at ${f.postFix}: app.js`);
  },
);

t.test('post-proof-mutation: an application file edited after proof is refused', async (t) => {
  const f = await buildFixture(t);
  await writeFile(join(f.repo, 'app.js'), 'export const add = () => 4;\n');
  await expectRule(t, f, 'post-proof-mutation', 'application changed after proof', true);
});

t.test('post-proof-mutation: a new untracked application file is refused', async (t) => {
  const f = await buildFixture(t);
  await writeFile(join(f.repo, 'backdoor.js'), 'x');
  await expectRule(t, f, 'post-proof-mutation', 'backdoor.js');
});

t.test('post-proof-mutation: a commit after the proof is refused', async (t) => {
  const f = await buildFixture(t);
  await writeFile(join(f.repo, 'app.js'), 'export const add = (a, b) => a + b + 0;\n');
  await f.git('commit', '-q', '-am', 'after proof');
  await expectRule(t, f, 'post-proof-mutation', 'application changed after proof');
});

t.test('post-proof-mutation: a proof that names no commit fails on commissioned runs', async (t) => {
  const f = await buildFixture(t, { commissioned: true, corrective: false });
  await f.mutate('proof/proof.json', (d) => delete d.subject);
  await expectRule(t, f, 'post-proof-mutation', 'does not name the commit', false);
});

t.test('post-proof-mutation: a proof run on a dirty tree fails', async (t) => {
  const f = await buildFixture(t);
  await f.mutate('proof/proof.json', (d) => (d.subject.dirty = true));
  await expectRule(t, f, 'post-proof-mutation', 'uncommitted changes', false);
});

t.test('post-proof-mutation: a packet binding another commit fails', async (t) => {
  const f = await buildFixture(t, { commissioned: true, corrective: false });
  await f.repack((p) => (p.subject.commit = f.preFix));
  await expectRule(t, f, 'post-proof-mutation', 'not the proven');
});

t.test('post-proof-mutation: a working tree git cannot compare is refused, never a pass', async (t) => {
  const f = await buildFixture(t, { commissioned: true, corrective: false });
  f.env.repoRoot = await mkdtemp(join(tmpdir(), 'hb-no-repo-'));
  t.teardown(() => rm(f.env.repoRoot, { recursive: true, force: true }));
  t.match(await f.rule('post-proof-mutation'), [
    `post-proof-mutation: the working tree cannot be compared with proven commit ${f.postFix}`,
  ]);
});

t.test('post-proof-mutation: without a valid proof the proven commit is unknown', async (t) => {
  const f = await buildFixture(t, { commissioned: true, corrective: false });
  await f.mutate('proof/proof.json', (d) => delete d.status);
  await expectRule(t, f, 'post-proof-mutation', 'the proven commit is unknown', false);
});

for (const flag of ['--assume-unchanged', '--skip-worktree']) {
  t.test(`post-proof-mutation: a file flagged ${flag} is reported whatever its bytes`, async (t) => {
    const f = await buildFixture(t, { commissioned: true, corrective: false });
    await f.git('update-index', flag, 'app.js');
    await expectRule(t, f, 'post-proof-mutation', `application changed after proof at ${f.postFix}: app.js`);
  });
}
