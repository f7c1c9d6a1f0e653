import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { runDirName, runPaths } from '../../src/storage/paths.js';
import { cleanup, ev, makeTestEnv, startTestBridge, type TestEnv } from '../helpers/bridge.js';
import { dropRunIndex } from '../helpers/run-index.js';

/**
 * CONTRACT 7: a run whose files fail authentication is quarantined with the reason, under its own
 * ID, while the others keep working. Two run directories swapped (each config is authentic but
 * sits in the other run's directory) quarantine both runs under their IDs; a directory no
 * authentic config attributes to a run is never written over by a create of that run (409
 * `run_quarantined`, not a 500), and nothing is stored.
 */
async function seeded(runs: string[]): Promise<{ te: TestEnv; createdAt: Map<string, string> }> {
  const te = await makeTestEnv();
  const b = await startTestBridge(te);
  const createdAt = new Map<string, string>();
  for (const runId of runs) {
    const r = await b.req('POST', `/runs/${runId}/events`, ev());
    createdAt.set(runId, r.body['run'].createdAt);
  }
  await b.close();
  return { te, createdAt };
}

t.test('a config that names another run: the snapshot still names this one', async (t) => {
  const { te } = await seeded(['rg']);
  const paths = runPaths(te.dataDir, 'rg');
  const config = await readFile(paths.config, 'utf8');
  await writeFile(paths.config, config.replace('"runId":"rg"', '"runId":"rX"'));
  const bridge = await startTestBridge(te);
  t.teardown(() => cleanup(bridge));
  const got = await bridge.req('GET', '/runs/rg');
  t.equal(got.body['run']?.status, 'quarantined', JSON.stringify(got.body).slice(0, 200));
  t.match(got.body['run'].quarantine.reasons, [/^run-config\.json: /]);
});

t.test('two swapped run directories: both runs quarantined under their own IDs', async (t) => {
  const { te, createdAt } = await seeded(['rb', 'rc', 'rd']);
  const [b, c] = [runPaths(te.dataDir, 'rb').dir, runPaths(te.dataDir, 'rc').dir];
  await rename(b, `${b}.x`);
  await rename(c, b);
  await rename(`${b}.x`, c);
  await dropRunIndex(te.dataDir);
  const bridge = await startTestBridge(te);
  t.teardown(() => cleanup(bridge));
  for (const runId of ['rb', 'rc']) {
    const got = await bridge.req('GET', `/runs/${runId}`);
    t.equal(got.status, 200, `${runId}: ${JSON.stringify(got.body).slice(0, 200)}`);
    t.equal(got.body['run'].status, 'quarantined');
    t.same(got.body['run'].quarantine.reasons, ['run-config.json: run-config.json belongs to another run']);
    t.equal(got.body['run'].createdAt, createdAt.get(runId), 'listed at its own creation time');
    const before = await bridge.journal(runId);
    const w = await bridge.req('POST', `/runs/${runId}/events`, ev());
    t.equal(w.status, 409);
    t.equal(w.body['error'], 'run_quarantined');
    const again = await bridge.req('POST', '/runs', { id: runId });
    t.equal(again.status, 409, JSON.stringify(again.body));
    t.ok((await bridge.journal(runId)).equals(before), 'journal bytes unchanged');
  }
  const list = (await bridge.req('GET', '/runs')).body['runs'].map((r: any) => `${r.id} ${r.status}`);
  t.same(list, ['rb quarantined', 'rc quarantined', 'rd running'], 'listed by their IDs, in creation order');
  t.equal((await bridge.req('POST', '/runs/rd/events', ev())).status, 201, 'the other run is served');
});

t.test('a run directory whose config no longer names its run is not written over', async (t) => {
  const { te } = await seeded(['re', 'rf']);
  const paths = runPaths(te.dataDir, 're');
  const config = await readFile(paths.config, 'utf8');
  // The claimed ID no longer hashes to the directory, and there is no snapshot to name the run:
  // the run is indexed under the directory name.
  const renamed = config.replace('"runId":"re"', '"runId":"rX"');
  await writeFile(paths.config, renamed);
  await rm(paths.snapshot);
  await dropRunIndex(te.dataDir);
  const bridge = await startTestBridge(te);
  t.teardown(() => cleanup(bridge));
  const before = await readFile(paths.journal);
  const w = await bridge.req('POST', '/runs/re/events', ev());
  t.equal(w.status, 409, JSON.stringify(w.body));
  t.equal(w.body['error'], 'run_quarantined');
  t.match(w.body['problems'], [/no authentic config attributes to this run/]);
  t.ok((await readFile(paths.journal)).equals(before), 'journal bytes unchanged');
  t.equal(await readFile(paths.config, 'utf8'), renamed, 'config unchanged');
  const got = await bridge.req('GET', '/runs/re');
  t.equal(got.body['run'].status, 'quarantined', 'every later read agrees');
  t.match(
    got.body['run'].quarantine.reasons.join('\n'),
    /no authentic config attributes to this run/,
    'and keeps the reason the create was refused',
  );
  const create = await bridge.req('POST', '/runs', { id: 're' });
  t.equal(create.status, 409);
  t.equal(create.body['error'], 'run_quarantined');
  t.ok((await readFile(paths.journal)).equals(before), 'journal bytes unchanged after the create too');
  t.equal(await readFile(paths.config, 'utf8'), renamed, 'config unchanged after the create too');
  t.equal((await bridge.req('POST', '/runs/rf/events', ev())).status, 201, 'the other run is served');
});

t.test('a run directory whose files claim a malformed run ID is indexed under its own name', async (t) => {
  const { te } = await seeded(['rh']);
  // Unauthenticated bytes name a string no run ID can be; it hashes to the directory all the same.
  const claimed = '../rh\n';
  const dir = join(te.dataDir, runDirName(claimed));
  await mkdir(dir);
  // A seal that fails: the run is quarantined, not taken for a legacy layout.
  await writeFile(join(dir, 'run-config.json'), JSON.stringify({ runId: claimed, mac: '0'.repeat(64) }));
  const bridge = await startTestBridge(te);
  t.teardown(() => cleanup(bridge));
  const list = (await bridge.req('GET', '/runs')).body['runs'].map((r: any) => `${r.id} ${r.status}`);
  t.same(list, [`${runDirName(claimed)} quarantined`, 'rh running'], 'listed by its directory name');
});
