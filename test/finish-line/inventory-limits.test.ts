import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { buildInventory, INVENTORY_MAX_ENTRIES } from '../../src/validators/inventory.js';

/**
 * The inventory is all of the root or a problem: past INVENTORY_MAX_ENTRIES files the walk stops,
 * so a partial list would leave every later file unsigned and unchecked.
 */
t.test('a root holding more files than the inventory limit is a problem, never a partial list', async (t) => {
  const root = await realpath(await mkdtemp(join(tmpdir(), 'hb-inventory-')));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const perDir = 1000;
  for (let d = 0; d * perDir <= INVENTORY_MAX_ENTRIES; d++) {
    await mkdir(join(root, `d${d}`));
    await Promise.all(Array.from({ length: perDir }, (_, i) => writeFile(join(root, `d${d}`, `f${i}`), '')));
  }
  const inventory = await buildInventory(root);
  t.equal(inventory.entries.length, 0, 'no partial list');
  t.same(inventory.problems, [`the artifact root holds more than ${INVENTORY_MAX_ENTRIES} files`]);
});

t.test('a tree nested deeper than the walk descends is a problem', async (t) => {
  const root = await realpath(await mkdtemp(join(tmpdir(), 'hb-inventory-')));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const deep = join(root, ...Array.from({ length: 34 }, (_, i) => `n${i}`));
  await mkdir(deep, { recursive: true });
  await writeFile(join(deep, 'hidden.txt'), 'below the walk');
  const inventory = await buildInventory(root);
  t.match(inventory.problems, [/^inventory: n0\/n1\/.* is nested deeper than 32 directories$/]);
});
