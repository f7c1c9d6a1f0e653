import { execFileSync } from 'node:child_process';
import { closeSync } from 'node:fs';
import { mkdir, mkdtemp, realpath, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { openArtifactSync } from '../../src/validators/artifact-open-sync.js';
import { claimArtifact, openArtifact } from '../../src/validators/artifact-root.js';
import { HashPool } from '../../src/workers/pool.js';

/**
 * The worker-side opener (batched claims in the hash pool) must give exactly the verdicts of the
 * main-thread opener on hostile paths: links at the leaf or on the way, escapes, non-files.
 */
const cases = [
  'ok/file.txt',
  'ok/missing.txt',
  'link-leaf.txt',
  'linkdir/file.txt',
  'ok',
  'fifo',
  '../outside.txt',
  '/etc/passwd',
  'ok/../ok/file.txt',
  'ok\\file.txt',
];

async function verdictAsync(root: string, path: string): Promise<string> {
  try {
    const o = await openArtifact(root, path);
    await o.handle.close();
    return `ok ${o.size}`;
  } catch (err) {
    return `${(err as Error).name}: ${(err as Error).message}`;
  }
}

function verdictSync(root: string, path: string, checkedDirs?: Set<string>): string {
  try {
    const o = openArtifactSync(root, path, checkedDirs);
    closeSync(o.fd);
    return `ok ${o.size}`;
  } catch (err) {
    return `${(err as Error).name}: ${(err as Error).message}`;
  }
}

t.test('the sync opener and the async opener agree on every hostile path', async (t) => {
  const base = await realpath(await mkdtemp(join(tmpdir(), 'hb-parity-')));
  t.teardown(() => rm(base, { recursive: true, force: true }));
  const root = join(base, 'root');
  await mkdir(join(root, 'ok'), { recursive: true });
  await writeFile(join(root, 'ok', 'file.txt'), 'inside\n');
  await writeFile(join(base, 'outside.txt'), 'outside\n');
  await symlink(join(base, 'outside.txt'), join(root, 'link-leaf.txt'));
  await mkdir(join(base, 'elsewhere'));
  await writeFile(join(base, 'elsewhere', 'file.txt'), 'elsewhere\n');
  await symlink(join(base, 'elsewhere'), join(root, 'linkdir'));
  execFileSync('mkfifo', [join(root, 'fifo')]);
  // Alone, and as one batch does: every path twice with one set of directories checked.
  const batch = new Set<string>();
  for (const path of [...cases, ...cases]) {
    const a = await verdictAsync(root, path);
    t.equal(verdictSync(root, path), a, `${path}: ${a}`);
    t.equal(verdictSync(root, path, batch), a, `${path} in a batch: ${a}`);
  }
  t.same([...batch], [join(root, 'ok')], 'only the real directory is taken as checked');
  t.match(verdictSync(root, 'ok/file.txt'), /^ok 7$/, 'the good file opens');
  t.match(verdictSync(root, 'linkdir/file.txt'), /^ArtifactError/, 'a linked directory is refused');
  // A root named through a link (not the real root its callers must pass): every component the
  // openers open is a directory, so only the realpath check (or the kernel's name for the opened
  // file) tells that the file does not live at the path checked.
  const aliased = join(base, 'alias');
  await symlink(root, aliased);
  const escaped = 'ArtifactError: ok/file.txt escapes the artifact root';
  t.equal(await verdictAsync(aliased, 'ok/file.txt'), escaped);
  t.equal(verdictSync(aliased, 'ok/file.txt'), escaped, 'the sync opener refuses it the same way');
});

t.test(
  'a directory swapped for a link after its batch checked it refuses the files opened through it',
  async (t) => {
    const base = await realpath(await mkdtemp(join(tmpdir(), 'hb-parity-')));
    t.teardown(() => rm(base, { recursive: true, force: true }));
    const root = join(base, 'root');
    await mkdir(join(root, 'd'), { recursive: true });
    await writeFile(join(root, 'd', 'a.txt'), 'a\n');
    await mkdir(join(base, 'elsewhere'));
    await writeFile(join(base, 'elsewhere', 'b.txt'), 'b\n');
    const batch = new Set<string>();
    t.equal(verdictSync(root, 'd/a.txt', batch), 'ok 2');
    await rename(join(root, 'd'), join(root, 'd-moved'));
    await symlink(join(base, 'elsewhere'), join(root, 'd'));
    t.ok(batch.has(join(root, 'd')), 'the directory is not opened again in this batch');
    t.equal(verdictSync(root, 'd/b.txt', batch), 'ArtifactError: d/b.txt escapes the artifact root');
    t.equal(
      await verdictAsync(root, 'd/b.txt'),
      verdictSync(root, 'd/b.txt'),
      'a new batch refuses it at the link',
    );
  },
);

t.test('batched claims in the pool equal claimArtifact, and report failures per path', async (t) => {
  const base = await realpath(await mkdtemp(join(tmpdir(), 'hb-parity-')));
  const pool = new HashPool(2);
  t.teardown(async () => {
    await pool.close();
    await rm(base, { recursive: true, force: true });
  });
  const paths: string[] = [];
  for (let i = 0; i < 40; i++) {
    const p = `d${i % 3}/f${i}.bin`;
    await mkdir(join(base, `d${i % 3}`), { recursive: true });
    await writeFile(join(base, p), Buffer.alloc(i * 1000 + (i === 39 ? 3 * 1024 * 1024 : 0), i));
    paths.push(p);
  }
  await symlink(join(base, 'd0', 'f0.bin'), join(base, 'link.bin'));
  const results = await pool.claimMany(base, [...paths, 'nope.bin', 'link.bin'], {
    needles: ['\u0001'.repeat(4)],
  });
  t.equal(results.length, paths.length + 2);
  for (const [i, path] of paths.entries()) {
    const want = await claimArtifact(base, path);
    const got = results[i];
    t.ok(got?.ok, path);
    if (got?.ok) {
      t.strictSame([got.path, got.sha256, got.size], [want.path, want.sha256, want.size], path);
      t.equal(got.leaked, i === 1, `${path} credential scan`);
    }
  }
  t.match(results.at(-2), { ok: false, path: 'nope.bin', missing: true });
  t.match(results.at(-1), { ok: false, path: 'link.bin', missing: false });
});

t.test('a clean scan is reused only for the same bytes: changed bytes are scanned again', async (t) => {
  const base = await realpath(await mkdtemp(join(tmpdir(), 'hb-parity-')));
  const pool = new HashPool(1);
  t.teardown(async () => {
    await pool.close();
    await rm(base, { recursive: true, force: true });
  });
  const needle = 'credential-value-0123456789-abcdefghij';
  await writeFile(join(base, 'a.txt'), 'clean bytes\n');
  await writeFile(join(base, 'b.txt'), `leaks ${needle}\n`);
  const first = await pool.claimMany(base, ['a.txt', 'b.txt'], { needles: [needle] });
  t.match(first, [
    { ok: true, leaked: false },
    { ok: true, leaked: true },
  ]);
  const digest = (i: number) => (first[i]?.ok ? first[i].sha256 : '');
  const expected = { 'a.txt': digest(0), 'b.txt': digest(1) };
  const again = await pool.claimMany(base, ['a.txt', 'b.txt'], { needles: [needle], expected });
  t.match(
    again,
    [
      { ok: true, leaked: false },
      { ok: true, leaked: true },
    ],
    'a leaking digest never counts as clean',
  );
  await writeFile(join(base, 'a.txt'), `now ${needle}\n`);
  const changed = await pool.claimMany(base, ['a.txt'], { needles: [needle], expected });
  t.match(changed, [{ ok: true, leaked: true }], 'the credential in the new bytes is found');
  t.not(changed[0]?.ok && changed[0].sha256, digest(0));
});
