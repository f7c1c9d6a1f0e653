import { cp, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import t from 'tap';
import { execa } from '#execa';
import { judgingCode } from '../../src/server/runtime-identity.js';
import { ROOT } from '../helpers/paths.js';

/**
 * The runtime identity a completion seals covers all the code that judges it: the validators,
 * the contract and its schemas, the hash and document workers, the TypeBox bundle that compiles
 * every schema check, and the secretlint bundle the secret scan runs. Each is shown to move the
 * digest of a built copy of dist/.
 */
t.test('the judged code includes the workers, the TypeBox and the secretlint bundles', async (t) => {
  const dirs = judgingCode().map((c) => relative(join(ROOT, 'dist'), c.dir));
  t.same(dirs.sort(), [
    'src/contract',
    'src/contract/artifacts',
    'src/validators',
    'src/workers',
    'vendor/secretlint',
    'vendor/typebox',
  ]);
  for (const { dir, ext } of judgingCode()) {
    t.ok(
      (await readdir(dir)).some((n) => n.endsWith(ext)),
      `${relative(ROOT, dir)} holds ${ext} files`,
    );
  }
});

t.test('a change to any judging file, and only to those, moves the digest', async (t) => {
  const copy = await mkdtemp(join(tmpdir(), 'harness-identity-'));
  t.teardown(() => rm(copy, { recursive: true, force: true }));
  for (const part of ['src', 'vendor']) {
    await cp(join(ROOT, 'dist', part), join(copy, 'dist', part), { recursive: true });
  }
  await cp(join(ROOT, 'package.json'), join(copy, 'package.json'));
  const digest = async () =>
    (
      await execa(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `const m = await import(${JSON.stringify(join(copy, 'dist/src/server/runtime-identity.js'))}); process.stdout.write(await m.validatorCodeDigest())`,
        ],
        { cwd: copy },
      )
    ).stdout;
  const base = await digest();
  t.match(base, /^[0-9a-f]{64}$/);
  await writeFile(join(copy, 'dist/src/server/unrelated.js'), '// not judging code\n');
  t.equal(await digest(), base, 'a file outside the judging code does not');
  const chunks = (await readdir(join(copy, 'dist/vendor/typebox'))).filter((n) => n.startsWith('chunk-'));
  let before = base;
  for (const file of [
    'src/workers/tasks.js',
    'src/validators/finish-line.js',
    `vendor/typebox/${chunks[0]}`,
    'vendor/secretlint/index.js',
  ]) {
    await writeFile(join(copy, 'dist', file), '\n// edited\n', { flag: 'a' });
    const now = await digest();
    t.not(now, before, `${file} does`);
    before = now;
  }
});
