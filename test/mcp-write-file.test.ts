import { execFile } from 'node:child_process';
import * as crypto from 'node:crypto';
import { lstat, mkdir, mkdtemp, readdir, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { WriteRefused, writeArtifactFile } from '../src/mcp/write-file.js';

/**
 * The MCP artifact writer's last two defences, which a static tree cannot show: the temp file is
 * created fresh (O_CREAT|O_EXCL|O_NOFOLLOW), so a link planted at its name is never written
 * through; and the written file is re-read through the no-link reader and must hash to the bytes
 * written. The writer is loaded with a fixed temp name and with a reader that sees other bytes.
 * Then the writer's own refusals, which the tool's reads before it cannot stand in for: a linked
 * directory on the way, and a leaf that is not a regular file.
 */
const base = await realpath(await mkdtemp(join(tmpdir(), 'harness-write-file-')));
t.teardown(() => rm(base, { recursive: true, force: true }));
const FIXED = Buffer.alloc(12, 0xab);
const tempName = `.harness-write-${FIXED.toString('hex')}.tmp`;

// Specifiers are resolved from this file's own URL: tap resolves a relative one from the
// source-mapped caller (test/*.ts), while the modules are the compiled ones beside this file.
async function writerWith(mocks: Record<string, unknown>) {
  return t.mockImport<typeof import('../src/mcp/write-file.js')>(
    new URL('../src/mcp/write-file.js', import.meta.url).href,
    mocks,
  );
}

t.test('a link planted at the temp name is refused, and its target is untouched', async (t) => {
  const root = join(base, 'root-a');
  const outside = join(base, 'outside-a');
  await mkdir(join(root, 'run'), { recursive: true });
  await mkdir(outside);
  await writeFile(join(outside, 'victim'), 'untouched');
  await symlink(join(outside, 'victim'), join(root, 'run', tempName));
  const { writeArtifactFile } = await writerWith({
    'node:crypto': { ...crypto, randomBytes: () => FIXED },
  });
  await t.rejects(writeArtifactFile(root, 'run/intake.json', Buffer.from('payload')));
  t.equal(await readFile(join(outside, 'victim'), 'utf8'), 'untouched', 'nothing written through the link');
  t.same((await readdir(join(root, 'run'))).sort(), [tempName], 'no artifact appeared');
});

t.test('bytes that do not re-read as written are refused', async (t) => {
  const root = join(base, 'root-b');
  await mkdir(root);
  const { writeArtifactFile, WriteRefused } = await writerWith({
    [new URL('../src/validators/artifact-root.js', import.meta.url).href]: {
      claimArtifact: async (_root: string, path: string) => ({
        path,
        sha256: '0'.repeat(64),
        size: 7,
        mtimeMs: 0,
      }),
    },
  });
  const err = await writeArtifactFile(root, 'run/intake.json', Buffer.from('payload')).catch((e: Error) => e);
  t.type(err, WriteRefused);
  t.match((err as Error).message, /run\/intake\.json changed while it was written/);
});

/** The writer's refusal, or a failure if it wrote. */
const refusalOf = (root: string, path: string) =>
  writeArtifactFile(root, path, Buffer.from('payload')).then(
    () => null,
    (e: unknown) => e,
  );

t.test('a linked directory component is never followed, not even to create what lies below it', async (t) => {
  const root = join(base, 'root-c');
  const outside = join(base, 'outside-c');
  await mkdir(root);
  await mkdir(outside);
  await symlink(outside, join(root, 'rca'));
  for (const path of ['rca/x.json', 'rca/deep/x.json']) {
    const err = await refusalOf(root, path);
    t.type(err, WriteRefused, path);
    t.same((err as WriteRefused | null)?.problems, ['rca is a symbolic link or not a directory'], path);
  }
  // Followed, the link would have been walked into: the missing `deep` created outside the root.
  t.same(await readdir(outside), [], 'nothing was created or written through the link');
  t.ok((await lstat(join(root, 'rca'))).isSymbolicLink());
});

t.test('an existing leaf that is not a regular file is refused and left as it is', async (t) => {
  const root = join(base, 'root-d');
  const outside = join(base, 'outside-d');
  await mkdir(join(root, 'run'), { recursive: true });
  await mkdir(outside);
  await writeFile(join(outside, 'victim'), 'untouched');
  await symlink(join(outside, 'victim'), join(root, 'run', 'link.json'));
  await mkdir(join(root, 'run', 'dir.json'));
  await promisify(execFile)('mkfifo', [join(root, 'run', 'fifo.json')]);
  const cases: [string, string, (s: Awaited<ReturnType<typeof lstat>>) => boolean][] = [
    ['run/link.json', 'a symbolic link', (s) => s.isSymbolicLink()],
    ['run/dir.json', 'not a regular file', (s) => s.isDirectory()],
    ['run/fifo.json', 'not a regular file', (s) => s.isFIFO()],
  ];
  for (const [path, what, still] of cases) {
    const err = await refusalOf(root, path);
    t.type(err, WriteRefused, path);
    t.same((err as WriteRefused | null)?.problems, [`${path} exists and is ${what}`]);
    t.ok(still(await lstat(join(root, path))), `${path} was not replaced`);
  }
  t.equal(await readFile(join(outside, 'victim'), 'utf8'), 'untouched', 'the link target was not written');
  t.same((await readdir(join(root, 'run'))).sort(), ['dir.json', 'fifo.json', 'link.json'], 'no temp file');
  t.same(await readdir(join(root, 'run', 'dir.json')), []);
});

t.test('removeWrittenFile takes the written file and nothing else at its path', async (t) => {
  const { removeWrittenFile } = await import('../src/mcp/write-file.js');
  const root = join(base, 'root-e');
  await mkdir(root);
  const write = () => writeArtifactFile(root, 'run/x.json', Buffer.from('written'));

  const untouched = await write();
  await removeWrittenFile(root, untouched);
  t.same(await readdir(join(root, 'run')), [], 'the written file is removed');

  const rewritten = await write();
  await writeFile(join(root, 'run/x.json'), 'changed in place');
  await removeWrittenFile(root, rewritten);
  t.equal(await readFile(join(root, 'run/x.json'), 'utf8'), 'changed in place', 'other bytes stay');

  const replaced = await write();
  await rm(join(root, 'run/x.json'));
  await writeFile(join(root, 'run/x.json'), 'written');
  await removeWrittenFile(root, { ...replaced, ino: replaced.ino + 1 });
  t.equal(
    await readFile(join(root, 'run/x.json'), 'utf8'),
    'written',
    'another file with the same bytes stays',
  );

  const fifo = await write();
  await rm(join(root, 'run/x.json'));
  await promisify(execFile)('mkfifo', [join(root, 'run/x.json')]);
  await removeWrittenFile(root, fifo);
  t.ok((await lstat(join(root, 'run/x.json'))).isFIFO(), 'a FIFO in its place stays, and is not waited on');
  await rm(join(root, 'run/x.json'));

  // The directory swapped for a link to one holding a file with the same name and bytes.
  const moved = await write();
  const outside = join(base, 'outside-e');
  await mkdir(outside);
  await writeFile(join(outside, 'x.json'), 'written');
  await rm(join(root, 'run'), { recursive: true });
  await symlink(outside, join(root, 'run'));
  await removeWrittenFile(root, { ...moved, ino: (await lstat(join(outside, 'x.json'))).ino });
  t.same(await readdir(outside), ['x.json'], 'nothing is removed through a link');
});
