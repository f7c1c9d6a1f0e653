import * as crypto from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';

/**
 * The MCP artifact writer's last two defences, which a static tree cannot show: the temp file is
 * created fresh (O_CREAT|O_EXCL|O_NOFOLLOW), so a link planted at its name is never written
 * through; and the written file is re-read through the no-link reader and must hash to the bytes
 * written. The writer is loaded with a fixed temp name and with a reader that sees other bytes.
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
