import { mkdir, mkdtemp, open, readdir, readFile, readlink, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { atomicWrite } from '../../src/storage/atomic.js';

/**
 * CONTRACT 7, atomic replace: temp file, fsync, rename, fsync of the directory. A crash (power
 * loss) is what tells a missing fsync; here every FileHandle sync is recorded with the path its
 * descriptor names and what the target held at that moment, so each step's order is checked.
 */
t.test('atomicWrite syncs the new bytes before the rename and the directory after it', async (t) => {
  const dir = await realpath(await mkdtemp(join(tmpdir(), 'harness-atomic-')));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const target = join(dir, 'run.json');
  await writeFile(target, 'old');

  const probe = await open(target, 'r');
  const proto = Object.getPrototypeOf(probe) as { sync: (this: { fd: number }) => Promise<void> };
  await probe.close();
  const original = proto.sync;
  const syncs: { path: string; target: string }[] = [];
  proto.sync = async function (this: { fd: number }) {
    syncs.push({ path: await readlink(`/proc/self/fd/${this.fd}`), target: await readFile(target, 'utf8') });
    return original.call(this);
  };
  t.teardown(() => {
    proto.sync = original;
  });

  await atomicWrite(target, 'new');
  t.equal(await readFile(target, 'utf8'), 'new');
  const files = syncs.filter((s) => s.path !== dir);
  t.equal(files.length, 1, 'one file synced');
  t.match(
    files[0],
    { path: /\/\.run\.json\.[0-9a-f]+\.tmp$/, target: 'old' },
    'the temp file, before the rename',
  );
  t.same(
    syncs.filter((s) => s.path === dir).map((s) => s.target),
    ['new'],
    'the directory, after the rename',
  );
  t.same(await readdir(dir), ['run.json'], 'no temp file is left');
});

t.test('a replace that fails leaves no temp file behind', async (t) => {
  const dir = await realpath(await mkdtemp(join(tmpdir(), 'harness-atomic-')));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  // The rename fails: the target is a directory that is not empty.
  const target = join(dir, 'run.json');
  await mkdir(target);
  await writeFile(join(target, 'kept'), '');
  await t.rejects(atomicWrite(target, 'new'));
  t.same(await readdir(dir), ['run.json'], 'after a failed rename');
  // The sync fails (an I/O error): the temp file is removed before the error is reported.
  const probe = await open(join(target, 'kept'), 'r');
  const proto = Object.getPrototypeOf(probe) as { sync: () => Promise<void> };
  await probe.close();
  const original = proto.sync;
  proto.sync = () => Promise.reject(Object.assign(new Error('EIO: i/o error'), { code: 'EIO' }));
  t.teardown(() => {
    proto.sync = original;
  });
  await t.rejects(atomicWrite(join(dir, 'other.json'), 'new'), { code: 'EIO' });
  proto.sync = original;
  t.same(await readdir(dir), ['run.json'], 'after a failed sync');
});
