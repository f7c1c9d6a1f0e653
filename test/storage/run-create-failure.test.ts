import { constants } from 'node:fs';
import fsp, { readdir, realpath, stat } from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import t, { type Test } from 'tap';
import { runPaths } from '../../src/storage/paths.js';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';
import { expectRejected } from '../helpers/expect.js';
import { recordHandleSyncs } from '../helpers/patch-fs.js';

/** Makes `fsp.open` refuse (EMFILE) each open `match` picks, until `restore`; counts the refusals. */
function refuseOpens(t: Test, match: (path: unknown, flags: unknown) => boolean) {
  const original = fsp.open;
  const refusal = {
    refused: 0,
    restore: () => {
      fsp.open = original;
      syncBuiltinESMExports();
    },
  };
  fsp.open = ((path: unknown, flags: unknown, mode?: unknown) => {
    if (!match(path, flags)) return original(path as string, flags as number, mode as number);
    refusal.refused++;
    return Promise.reject(Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' }));
  }) as typeof fsp.open;
  syncBuiltinESMExports();
  t.teardown(refusal.restore);
  return refusal;
}

/**
 * A run whose journal cannot be opened once its files are written (out of descriptors, say) is
 * not left behind: the request fails with 500 and a retry creates the run afresh, where an empty
 * run left over would answer an explicit create with 200 `created: false`.
 */
t.test('a run whose journal cannot be opened is not created', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const journal = runPaths(b.t.dataDir, 'f').journal;
  const entriesBefore = await readdir(b.t.dataDir);
  // The journal writer's open (read and append); the run files are written by other opens.
  const refusal = refuseOpens(
    t,
    (path, flags) => path === journal && typeof flags === 'number' && (flags & constants.O_APPEND) !== 0,
  );
  const viaEvent = await b.req('POST', '/runs/f/events', ev({ id: 'f0' }));
  const viaCreate = await b.req('POST', '/runs', { id: 'f', title: 'T' });
  refusal.restore();
  t.equal(refusal.refused, 2, 'both requests reached the journal open');
  t.equal(viaEvent.status, 500);
  t.equal(viaCreate.status, 500);
  t.same(await readdir(b.t.dataDir), entriesBefore, 'no run directory is left');
  t.equal((await b.req('GET', '/runs/f')).status, 404, 'nor any run');
  t.equal((await b.req('GET', '/runs')).body.runs.length, 0);

  const created = await b.req('POST', '/runs', { id: 'f', title: 'T' });
  t.equal(created.status, 201, 'a retry creates the run');
  t.equal(created.body.created, true);
  t.equal((await b.req('POST', '/runs/f/events', ev({ id: 'f0' }))).status, 201);
});

/**
 * A POST /runs failed by the one open `match` picks (`seen.refused`: how many it refused so far;
 * `seen.dataDirs`: the data directory's path as given and as resolved): 500, the data directory
 * as it was, and a retry creates the run.
 */
async function refusedCreation(
  t: Test,
  id: string,
  match: (path: unknown, flags: unknown, seen: { refused: number; dataDirs: string[] }) => boolean,
  what: string,
) {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const dataDirs = [b.t.dataDir, await realpath(b.t.dataDir)];
  const entriesBefore = await readdir(b.t.dataDir);
  const refusal = refuseOpens(t, (path, flags) => match(path, flags, { refused: refusal.refused, dataDirs }));
  const refused = await b.req('POST', '/runs', { id, title: 'T' });
  refusal.restore();
  t.equal(refusal.refused, 1, what);
  t.equal(refused.status, 500);
  t.same(await readdir(b.t.dataDir), entriesBefore, 'no run directory, temporary or placed, is left');
  t.equal((await b.req('POST', '/runs', { id, title: 'T' })).status, 201, 'a retry creates the run');
}

t.test('a run whose files cannot all be written leaves no temporary directory behind', (t) =>
  // The creation's own open of the empty journal, inside the temporary run directory.
  refusedCreation(
    t,
    'w',
    (path, flags) => flags === 'wx' && String(path).endsWith('/events.jsonl'),
    'the creation reached the journal open',
  ),
);

t.test('a run directory that cannot be synced into place is taken out again', (t) =>
  // The first sync of the data directory: the one after the run directory was renamed into it.
  refusedCreation(
    t,
    'd',
    (path, flags, seen) => flags === 'r' && seen.dataDirs.includes(String(path)) && seen.refused === 0,
    'the data directory sync was refused',
  ),
);

t.test('a new run is synced, file and directory entries, before it is acknowledged', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const dataDir = await realpath(b.t.dataDir);
  const seen = await recordHandleSyncs(t);
  t.equal((await b.req('POST', '/runs', { id: 'r', title: 'T' })).status, 201);
  // The run's files are made in a temporary directory that is then renamed into place.
  const names = seen
    .filter((s) => s.startsWith('sync '))
    .map((s) =>
      s
        .slice(5)
        .replace(dataDir, '<data>')
        .replace(/\.tmp-run-[0-9a-f]{64}-[0-9a-f]{8}/, '<tmp>'),
    );
  const journal = names.indexOf('<data>/<tmp>/events.jsonl');
  const tmp = names.lastIndexOf('<data>/<tmp>');
  const placed = names.lastIndexOf('<data>');
  t.ok(journal >= 0, `the empty journal is synced: ${names}`);
  t.ok(tmp > journal, 'then the directory holding it');
  t.ok(placed > tmp, 'then the data directory, once the run directory is renamed into it');
});

t.test('a refused first event removes its run durably: renamed aside and synced, then deleted', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const dataDir = await realpath(b.t.dataDir);
  const seen = await recordHandleSyncs(t);
  const { rename, rm } = fsp;
  t.teardown(() => {
    Object.assign(fsp, { rename, rm });
    syncBuiltinESMExports();
  });
  Object.assign(fsp, {
    rename: (from: string, to: string) => {
      seen.push(`rename ${from} ${to}`);
      return rename(from, to);
    },
    rm: (path: string, opts: object) => {
      seen.push(`rm ${path}`);
      return rm(path, opts);
    },
  });
  syncBuiltinESMExports();
  const missing = ev({
    type: 'artifact.written',
    artifact: 'run/missing.json',
    artifactRoot: b.t.artifactRoot,
  });
  await expectRejected(
    t,
    b,
    'gone',
    () => b.req('POST', '/runs/gone/events', missing),
    400,
    'artifact_verification_failed',
  );
  const steps = seen
    .filter((s) => !s.startsWith('datasync '))
    .map((s) => s.replaceAll(dataDir, '<data>').replace(/\.tmp-run-[0-9a-f]{64}-[0-9a-f]{8}/g, '<tmp>'));
  const aside = steps.findIndex((s) => /^rename <data>\/run-[0-9a-f]{64} <data>\/<tmp>$/.test(s));
  t.ok(aside >= 0, `the run directory is renamed aside: ${steps}`);
  t.same(
    steps.slice(aside + 1),
    ['sync <data>', 'rm <data>/<tmp>'],
    'the rename is synced before the delete',
  );
});

t.test("a new run's directory and files are private to the bridge's user", async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  t.equal((await b.req('POST', '/runs', { id: 'p', title: 'T' })).status, 201);
  const paths = runPaths(b.t.dataDir, 'p');
  t.equal((await stat(paths.dir)).mode & 0o777, 0o700, 'the run directory: 0700');
  t.equal((await stat(paths.config)).mode & 0o777, 0o600, 'run-config.json: 0600');
  t.equal((await stat(paths.journal)).mode & 0o777, 0o600, 'events.jsonl: 0600');
});
