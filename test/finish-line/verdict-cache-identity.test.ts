import { link, mkdir, mkdtemp, realpath, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { BIND_BY_NAME_MAX } from '../../src/contract/index.js';
import { boundFiles, TooManyToBind } from '../../src/server/verdict-inputs.js';
import type { ValidatorInputs } from '../../src/validators/inputs.js';
import { documentRefsHere } from '../../src/workers/document-refs.js';

/**
 * What the verdict cache key binds for the files validators read by name (verdict-inputs.ts):
 * every change a by-name open could see moves it, and nothing else does.
 */
async function tree(t: Test) {
  const root = await realpath(await mkdtemp(join(tmpdir(), 'hb-bound-')));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  await mkdir(join(root, 'run'));
  await writeFile(join(root, 'run/route.json'), '{}');
  await writeFile(
    join(root, 'run/packet.json'),
    JSON.stringify({ ref: { path: 'x/named.md', sha256: 'a' } }),
  );
  return root;
}
const inputs: ValidatorInputs = {
  files: ['run/route.json', 'run/packet.json', 'rca/rca.json'],
  documents: ['run/packet.json'],
  enumeratesRoot: false,
  verifiedFiles: false,
  repository: { trustStore: false, workingTree: false, commitsNamedIn: [] },
};
const lines = async (root: string, i = inputs) => (await boundFiles(root, i, documentRefsHere)).lines;

t.test('files no rule reads by name do not move the binding', async (t) => {
  const root = await tree(t);
  const before = await lines(root);
  await writeFile(join(root, 'run/notes.md'), 'beside an input');
  await mkdir(join(root, 'notes'));
  await writeFile(join(root, 'notes/x.md'), 'elsewhere');
  t.same(await lines(root), before);
  t.same(
    (await boundFiles(root, inputs, documentRefsHere)).paths,
    ['', 'rca', 'rca/rca.json', 'run', 'run/packet.json', 'run/route.json', 'x', 'x/named.md'],
    'the root, each input, each path the packet names, and the directories on the way',
  );
});

t.test('an absent input or named path appearing moves the binding', async (t) => {
  const root = await tree(t);
  const seen = [await lines(root)];
  await mkdir(join(root, 'rca'));
  seen.push(await lines(root)); // a directory on the way (its mode decides whether the open fails)
  await writeFile(join(root, 'rca/rca.json'), '{}');
  seen.push(await lines(root));
  await mkdir(join(root, 'x'));
  await writeFile(join(root, 'x/named.md'), 'named by the packet');
  seen.push(await lines(root));
  t.equal(new Set(seen.map((l) => l.join('\n'))).size, seen.length, 'every step is a new binding');
});

t.test('a same-size rewrite or a hard link to an input moves the binding', async (t) => {
  const root = await tree(t);
  const before = await lines(root);
  await writeFile(join(root, 'run/route.json'), '[]');
  const rewritten = await lines(root);
  t.not(rewritten.join('\n'), before.join('\n'));
  await link(join(root, 'run/route.json'), join(root, 'route-link.json'));
  t.not((await lines(root)).join('\n'), rewritten.join('\n'), 'nlink > 1 is refused by the open');
});

t.test('a directory on the way swapped for a link to itself moves the binding', async (t) => {
  const root = await tree(t);
  const byName = { ...inputs, documents: [] }; // the swap alone, not the packet it hides
  const before = await lines(root, byName);
  await rename(join(root, 'run'), join(root, 'run-real'));
  await symlink('run-real', join(root, 'run'));
  const after = await lines(root, byName);
  const leaf = (l: string[]) => l.find((x) => x.startsWith('"run/route.json" leaf'));
  t.equal(leaf(after), leaf(before), 'lstat of the file through the link sees the same file');
  t.not(after.join('\n'), before.join('\n'), 'the directory line shows the link the open refuses');
});

t.test('a named path that is no artifact path is bound as text, never looked up', async (t) => {
  const root = await tree(t);
  await writeFile(
    join(root, 'run/packet.json'),
    JSON.stringify({ a: { path: '../outside', sha256: 'a' }, b: { path: '/etc/passwd', sha256: 'b' } }),
  );
  const l = await lines(root);
  t.ok(l.includes('"../outside" leaf invalid'), l.join('\n'));
  t.ok(l.includes('"/etc/passwd" leaf invalid'));
});

t.test('documents naming more paths than BIND_BY_NAME_MAX are not bound one by one', async (t) => {
  const root = await tree(t);
  const refs = Array.from({ length: BIND_BY_NAME_MAX + 1 }, (_, i) => ({ path: `n/${i}`, sha256: 'a' }));
  await writeFile(join(root, 'run/packet.json'), JSON.stringify({ refs }));
  // verdictInputsDigest binds the root's lstat inventory instead.
  const err = await boundFiles(root, inputs, documentRefsHere).catch((e: unknown) => e);
  t.ok(err instanceof TooManyToBind, String(err));
  await writeFile(join(root, 'run/packet.json'), JSON.stringify({ refs: refs.slice(1) }));
  t.equal(
    (await boundFiles(root, inputs, documentRefsHere)).paths.filter((p) => p.startsWith('n/')).length,
    BIND_BY_NAME_MAX,
  );
});
