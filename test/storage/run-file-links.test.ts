import { constants } from 'node:fs';
import fsp, { copyFile, readFile, rename, stat, symlink } from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import t from 'tap';
import { runPaths } from '../../src/storage/paths.js';
import { cleanup, ev, makeTestEnv, startTestBridge } from '../helpers/bridge.js';
import { expectRejected } from '../helpers/expect.js';

/**
 * Startup refuses a data directory holding symbolic links; a link planted in a run directory
 * while the bridge runs must not be followed either. Each run file is replaced by a link to a
 * byte-identical copy outside the data directory: followed, it would authenticate and the run would
 * be served (its journal appended to wherever the link points). Opened without following links,
 * the run is quarantined when it is next opened, and the link's target is never written.
 */
for (const file of ['journal', 'snapshot', 'config'] as const) {
  t.test(`a ${file} replaced by a link after startup quarantines its run when opened`, async (t) => {
    const te = await makeTestEnv();
    // An open-run cache of one: posting to the second run evicts the first, so reading it reopens it.
    const b = await startTestBridge(te, { storage: { cacheSize: 1 } });
    t.teardown(() => cleanup(b));
    t.equal((await b.req('POST', '/runs/linked/events', ev({ id: 'l-0' }))).status, 201);
    t.equal((await b.req('POST', '/runs/other/events', ev({ id: 'o-0' }))).status, 201);
    if (file === 'snapshot') {
      // Eviction writes run.json only for a run with many records since its last one; opening a
      // run whose snapshot trails its journal writes one (in the background).
      t.equal((await b.req('GET', '/runs/linked')).status, 200);
      t.equal((await b.req('POST', '/runs/other/events', ev({ id: 'o-1' }))).status, 201);
    }
    const path = runPaths(te.dataDir, 'linked')[file];
    for (let i = 0; i < 100 && !(await stat(path).catch(() => null)); i++) await delay(20);
    const outside = join(te.dir, `outside-${file}`);
    await copyFile(path, outside);
    await rename(path, `${path}.gone`);
    await symlink(outside, path);
    const target = await readFile(outside);

    const got = await b.req('GET', '/runs/linked');
    t.equal(got.status, 200, JSON.stringify(got.body).slice(0, 300));
    t.equal(got.body['run'].status, 'quarantined');
    t.match(got.body['run'].quarantine.reasons, [/is a symbolic link, which the bridge does not follow$/]);
    t.notMatch(JSON.stringify(got.body), te.dir, 'no absolute path in the answer');
    await expectRejected(
      t,
      b,
      'linked',
      () => b.req('POST', '/runs/linked/events', ev({ id: 'l-1' })),
      409,
      'run_quarantined',
    );
    t.ok((await readFile(outside)).equals(target), "the link's target is untouched");
    t.equal(
      (await b.req('POST', '/runs/other/events', ev({ id: 'o-2' }))).status,
      201,
      'other runs are served',
    );
  });
}

t.test('a run opened by a refused create/sync call is released: a link planted later is found', async (t) => {
  const te = await makeTestEnv();
  const b = await startTestBridge(te, { storage: { cacheSize: 1 } });
  t.teardown(() => cleanup(b));
  t.equal((await b.req('POST', '/runs', { id: 'synced', title: 'one' })).status, 201);
  t.equal((await b.req('POST', '/runs/synced/events', ev({ id: 's-0' }))).status, 201);
  const differs = () => b.req('POST', '/runs', { id: 'synced', title: 'two' });
  await expectRejected(t, b, 'synced', differs, 409, 'run_already_exists');
  // Still pinned, the run would stay cached and never be opened again to find the link.
  t.equal((await b.req('POST', '/runs/other/events', ev({ id: 'o-0' }))).status, 201);
  const path = runPaths(te.dataDir, 'synced').journal;
  const outside = join(te.dir, 'outside-synced-journal');
  await copyFile(path, outside);
  await rename(path, `${path}.gone`);
  await symlink(outside, path);
  const got = await b.req('GET', '/runs/synced');
  t.equal(got.body['run'].status, 'quarantined', JSON.stringify(got.body).slice(0, 300));
});

t.test('a journal replaced by a link between its scan and its writer open quarantines the run', async (t) => {
  const te = await makeTestEnv();
  const b = await startTestBridge(te, { storage: { cacheSize: 1 } });
  t.teardown(() => cleanup(b));
  t.equal((await b.req('POST', '/runs/raced/events', ev({ id: 'r-0' }))).status, 201);
  t.equal((await b.req('POST', '/runs/other/events', ev({ id: 'o-0' }))).status, 201);
  const path = runPaths(te.dataDir, 'raced').journal;
  const outside = join(te.dir, 'outside-raced-journal');
  const original = fsp.open;
  t.teardown(() => {
    fsp.open = original;
    syncBuiltinESMExports();
  });
  // The writer's open (read and append) comes after the scan read the journal: the link lands between.
  fsp.open = (async (p: unknown, flags: unknown, mode?: unknown) => {
    if (p === path && typeof flags === 'number' && (flags & constants.O_APPEND) !== 0) {
      fsp.open = original;
      syncBuiltinESMExports();
      await copyFile(path, outside);
      await rename(path, `${path}.gone`);
      await symlink(outside, path);
    }
    return original(p as string, flags as number, mode as number);
  }) as typeof fsp.open;
  syncBuiltinESMExports();
  const got = await b.req('GET', '/runs/raced');
  t.equal(got.status, 200, JSON.stringify(got.body).slice(0, 300));
  t.equal(got.body['run'].status, 'quarantined');
  t.match(got.body['run'].quarantine.reasons, [/^events\.jsonl: .*is a symbolic link/]);
});
