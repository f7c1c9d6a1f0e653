import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { statInventoryDigest } from '../../src/workers/stat-inventory.js';

/** The verdict cache's view of an artifact root: any change under it moves the digest. */
t.test(
  'any addition, same-size rewrite or link under the root moves the lstat inventory digest',
  async (t) => {
    const root = await mkdtemp(join(tmpdir(), 'hb-statinv-'));
    t.teardown(() => rm(root, { recursive: true, force: true }));
    await mkdir(join(root, 'a/b'), { recursive: true });
    await writeFile(join(root, 'a/b/file.txt'), 'one');
    const seen = [statInventoryDigest(root)];
    t.equal(statInventoryDigest(root), seen[0], 'stable while nothing changes');
    await writeFile(join(root, 'a/b/file.txt'), 'two');
    seen.push(statInventoryDigest(root));
    await writeFile(join(root, 'a/new.md'), '');
    seen.push(statInventoryDigest(root));
    await symlink('/etc', join(root, 'a/link'));
    seen.push(statInventoryDigest(root));
    t.ok(seen.every((d) => typeof d === 'string'));
    t.equal(new Set(seen).size, seen.length, 'every change gives a new digest');
    t.equal(statInventoryDigest(join(root, 'missing')), null, 'no digest for a root that cannot be walked');
  },
);
