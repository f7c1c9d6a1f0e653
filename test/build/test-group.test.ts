import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';

/**
 * The group runner (test/helpers/test-group.ts) is what makes tap reach every file under
 * test/<group>/, so a fault in it would skip tests without failing any. Each case builds a small
 * suite in a temp directory and runs its runner as a plain node process.
 */
const RUN_GROUP = new URL('../helpers/test-group.js', import.meta.url).href;
const TAP = import.meta.resolve('tap');

async function suite(t: Test, files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'harness-test-group-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  await mkdir(join(root, 'g'));
  await writeFile(
    join(root, 'g.test.js'),
    `import { runGroup } from '${RUN_GROUP}';\nrunGroup(import.meta.filename);\n`,
  );
  for (const [name, text] of Object.entries(files)) await writeFile(join(root, name), text);
  return root;
}

function run(root: string): { status: number | null; out: string } {
  const child = spawnSync(process.execPath, [join(root, 'g.test.js')], {
    env: { PATH: process.env['PATH'] ?? '' },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: child.status, out: child.stdout + child.stderr };
}

t.test('a file that loads slowly after one with a root teardown still runs its tests', async (t) => {
  const root = await suite(t, {
    'g/a.test.js': `import t from '${TAP}';\nt.teardown(() => {});\nt.test('a runs', async (t) => t.pass('a'));\n`,
    'g/b.test.js': `import t from '${TAP}';\nawait new Promise((r) => setTimeout(r, 300));\nt.test('b runs', async (t) => t.pass('b'));\n`,
  });
  const { status, out } = run(root);
  t.equal(status, 0, 'the group passes');
  if (status !== 0) t.comment(out);
  t.match(out, /^ok \d+ - a runs/m);
  t.match(out, /^ok \d+ - b runs/m, 'the second file ran');
});

t.test('a file that fails to load fails the group, by name', async (t) => {
  const root = await suite(t, {
    'g/a.test.js': `import t from '${TAP}';\nt.test('a runs', async (t) => t.pass('a'));\n`,
    'g/b.test.js': `throw new Error('b cannot load');\n`,
  });
  const { status, out } = run(root);
  t.not(status, 0);
  t.match(out, /not ok \d+ - b\.test\.js does not load/);
});

t.test('a directory of tests without its runner is refused', async (t) => {
  const root = await suite(t, { 'g/a.test.js': `import t from '${TAP}';\nt.pass('a');\n` });
  await mkdir(join(root, 'orphan'));
  const { status, out } = run(root);
  t.not(status, 0);
  t.match(out, /test\/orphan\/ has no runner/);
});
