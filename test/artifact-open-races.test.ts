import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';

/**
 * The two checks after the leaf is opened catch a swap between the open and the checks, which a
 * static tree cannot show: the leaf's realpath must be the literal path under the root (a link
 * put in its place resolves elsewhere), and the path must still name the opened inode. Both
 * openers (main thread and worker) are loaded with the file system answering as it would
 * mid-swap.
 */
const root = fs.realpathSync(fs.mkdtempSync(join(tmpdir(), 'harness-race-')));
t.teardown(() => fs.rmSync(root, { recursive: true, force: true }));
fs.mkdirSync(join(root, 'run'));
fs.writeFileSync(join(root, 'run', 'intake.json'), '{}');
fs.writeFileSync(join(root, 'run', 'other.json'), '{}');
const leaf = join(root, 'run', 'intake.json');
const elsewhere = join(root, 'run', 'other.json');

// What the file system says of the leaf once it has been swapped for a link or another file.
const swapped = {
  realpath: (p: string) => (p === leaf ? elsewhere : fs.realpathSync.native(p)),
  // With the caller's options: the sync opener asks for bigint fields.
  lstat: (p: string, o?: fs.StatSyncOptions) => fs.lstatSync(p === leaf ? elsewhere : p, o),
};
// And what Linux then names the opened file (the worker opener asks it first): the file that was
// opened no longer has the checked name, so its own name is not the leaf.
const kernelAfterSwap = (p: fs.PathLike) =>
  String(p).startsWith('/proc/self/fd/') ? `${leaf} (deleted)` : fs.readlinkSync(p);

// Resolved from this file's own URL: tap resolves a relative specifier from the source-mapped caller
// (test/*.ts), while the module to load is the compiled one beside the compiled test.
const opener = async (answers: Partial<typeof swapped> & { readlink?: typeof kernelAfterSwap }) => {
  const realpath = answers.realpath ?? fs.realpathSync.native;
  const readlink = answers.readlink ?? ((p: fs.PathLike) => fs.readlinkSync(p));
  const lstat = answers.lstat ?? ((p: string, o?: fs.StatSyncOptions) => fs.lstatSync(p, o));
  const { openArtifact } = await t.mockImport<typeof import('../src/validators/artifact-root.js')>(
    new URL('../src/validators/artifact-root.js', import.meta.url).href,
    {
      'node:fs/promises': {
        ...fsp,
        realpath: async (p: string) => realpath(p),
        lstat: async (p: string) => lstat(p),
      },
    },
  );
  const { openArtifactSync } = await t.mockImport<typeof import('../src/validators/artifact-open-sync.js')>(
    new URL('../src/validators/artifact-open-sync.js', import.meta.url).href,
    {
      'node:fs': {
        ...fs,
        realpathSync: Object.assign((p: string) => realpath(p), { native: (p: string) => realpath(p) }),
        lstatSync: (p: string, o?: fs.StatSyncOptions) => lstat(p, o),
        readlinkSync: (p: fs.PathLike) => readlink(p),
      },
    },
  );
  const verdicts: string[] = [];
  try {
    const o = await openArtifact(root, 'run/intake.json');
    await o.handle.close();
    verdicts.push('ok');
  } catch (err) {
    verdicts.push((err as Error).message);
  }
  try {
    fs.closeSync(openArtifactSync(root, 'run/intake.json').fd);
    verdicts.push('ok');
  } catch (err) {
    verdicts.push((err as Error).message);
  }
  return verdicts;
};

t.test('unswapped, both openers accept the file', async (t) => {
  t.same(await opener({}), ['ok', 'ok']);
});

t.test('a leaf whose realpath moved is refused as escaping', async (t) => {
  t.same(await opener({ realpath: swapped.realpath, readlink: kernelAfterSwap }), [
    'run/intake.json escapes the artifact root',
    'run/intake.json escapes the artifact root',
  ]);
});

t.test('a path that names another inode than the one opened is refused', async (t) => {
  t.same(await opener({ lstat: swapped.lstat, readlink: kernelAfterSwap }), [
    'run/intake.json changed while it was opened',
    'run/intake.json changed while it was opened',
  ]);
});

t.test('the kernel naming the opened file by the checked path stands for both checks', async (t) => {
  // Only what the worker opener asks first is mocked: its answer, the leaf itself, is taken.
  t.same(await opener({ realpath: swapped.realpath, lstat: swapped.lstat }), [
    'run/intake.json escapes the artifact root',
    'ok',
  ]);
});
