import { appendFile, mkdir, readdir, readFile, realpath, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { runPaths } from '../../src/storage/paths.js';
import {
  cleanup,
  ev,
  makeTestEnv,
  startTestBridge,
  type TestBridge,
  type TestEnv,
} from '../helpers/bridge.js';
import { runVerify } from '../helpers/cli.js';
import { allEvents, records } from '../helpers/expect.js';
import { recordHandleSyncs } from '../helpers/patch-fs.js';
import { dropRunIndex } from '../helpers/run-index.js';

/**
 * SPEC Errors 8 and CONTRACT 7: opening a run truncates an incomplete tail line (never
 * acknowledged: its fdatasync had not returned) and replays a snapshot that trails the journal; a
 * missing snapshot is rebuilt from the journal; a snapshot ahead of the journal is quarantined.
 */
async function seeded(t: Test, n = 4): Promise<TestEnv> {
  const te = await makeTestEnv();
  const b = await startTestBridge(te);
  for (let i = 0; i < n; i++) {
    t.equal((await b.req('POST', '/runs/r/events', ev({ id: `e${i}`, nodeId: 'intake' }))).status, 201);
  }
  await b.close(); // writes run.json for the open run
  return te;
}

async function restart(t: Test, te: TestEnv): Promise<TestBridge> {
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  return b;
}

t.test('a torn tail is truncated and the run continues cleanly', async (t) => {
  for (const tail of ['{"seq":4,"prev":"ab', '{"seq":4}', '\u0000\u0000\u0000']) {
    t.test(JSON.stringify(tail), async (t) => {
      const te = await seeded(t);
      const journal = runPaths(te.dataDir, 'r').journal;
      const intact = await readFile(journal);
      await appendFile(journal, tail);
      const b = await restart(t, te);
      const got = await b.req('GET', '/runs/r');
      t.equal(got.body['run'].status, 'running', 'not quarantined');
      t.equal(got.body['run'].eventCount, 4);
      t.ok((await b.journal('r')).equals(intact), 'the journal is cut back to its last complete record');
      const next = await b.req('POST', '/runs/r/events', ev({ id: 'after' }));
      t.equal(next.status, 201);
      t.equal(next.body['seq'], 4);
      await b.close();
      const again = await restart(t, te);
      t.same(
        (await allEvents(again, 'r')).map((e) => e.id),
        ['e0', 'e1', 'e2', 'e3', 'after'],
      );
    });
  }
});

t.test('a last record missing only its newline is kept, not cut as torn', async (t) => {
  // With the snapshot the close wrote (which covers that record) and without it.
  for (const snapshot of [true, false]) {
    t.test(snapshot ? 'with run.json' : 'without run.json', async (t) => {
      const te = await seeded(t);
      const paths = runPaths(te.dataDir, 'r');
      const intact = await readFile(paths.journal);
      t.equal(intact.at(-1), 0x0a);
      await writeFile(paths.journal, intact.subarray(0, -1));
      if (!snapshot) await rm(paths.snapshot);
      const verify = await runVerify(te.env);
      t.equal(verify.code, 0, verify.stdout);
      t.match(verify.stdout, /^ok r \(4 events, 0 artifacts\)$/m, 'verify counts it, no torn tail');
      const b = await restart(t, te);
      const got = await b.req('GET', '/runs/r');
      t.equal(got.body['run'].status, 'running', 'not quarantined');
      t.equal(got.body['run'].eventCount, 4, 'the acknowledged record is still there');
      t.ok((await b.journal('r')).equals(intact), 'its newline is written back');
      const next = await b.req('POST', '/runs/r/events', ev({ id: 'after' }));
      t.equal(next.status, 201);
      t.equal(next.body['seq'], 4);
      t.same(
        (await allEvents(b, 'r')).map((e) => e['id']),
        ['e0', 'e1', 'e2', 'e3', 'after'],
      );
    });
  }
});

t.test('run.json is written only after the journal prefix it binds is synced', async (t) => {
  const te = await makeTestEnv();
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  const b = await startTestBridge(te);
  t.equal((await b.req('POST', '/runs/r/events', ev({ id: 'e0' }))).status, 201);
  const paths = runPaths(await realpath(te.dataDir), 'r');
  const seen = await recordHandleSyncs(t);
  await b.close(); // writes run.json for the open run
  const journal = seen.indexOf(`datasync ${paths.journal}`);
  const snapshot = seen.findIndex((s) => s.startsWith(`sync ${paths.dir}/.run.json.`));
  t.ok(snapshot >= 0, 'run.json is written');
  t.ok(journal >= 0 && journal < snapshot, `the journal is synced first: ${seen.join(', ')}`);
});

t.test('a snapshot that trails the journal is replayed forward', async (t) => {
  const te = await seeded(t);
  const snapshot = runPaths(te.dataDir, 'r').snapshot;
  const old = await readFile(snapshot);
  const b = await startTestBridge(te);
  t.equal(
    (
      await b.req(
        'POST',
        '/runs/r/events',
        ev({ type: 'node.failed', nodeId: 'route', status: 'failed', failureReason: 'f', recoveryPath: 'p' }),
      )
    ).status,
    201,
  );
  t.equal((await b.req('POST', '/runs/r/events', ev({ nodeId: 'implement' }))).status, 201);
  await b.close();
  // As if the bridge died before rewriting run.json: the authenticated snapshot is for 4 of 6 records.
  await writeFile(snapshot, old);
  const b2 = await restart(t, te);
  const got = await b2.req('GET', '/runs/r');
  t.equal(got.body['run'].status, 'running');
  t.equal(got.body['run'].eventCount, 6);
  const state = Object.fromEntries(got.body['run'].nodes.map((n: any) => [n.id, n.state]));
  t.equal(state['route'], 'failed', 'a replayed event changed its node');
  t.equal(state['implement'], 'active');
  t.equal(got.body['run'].currentNodeId, 'implement');
});

t.test('a missing snapshot is rebuilt from the journal', async (t) => {
  const te = await seeded(t, 3);
  const paths = runPaths(te.dataDir, 'r');
  await rm(paths.snapshot);
  const b = await startTestBridge(te);
  const got = await b.req('GET', '/runs/r');
  t.equal(got.body['run'].status, 'running');
  t.equal(got.body['run'].eventCount, 3);
  t.equal(got.body['run'].nodes.find((n: any) => n.id === 'intake').state, 'active');
  await b.close();
  t.ok((await stat(paths.snapshot)).isFile(), 'run.json written again');
  const again = await restart(t, te);
  t.equal((await again.req('GET', '/runs/r')).body['run'].eventCount, 3);
});

t.test('a snapshot ahead of the journal quarantines the run', async (t) => {
  const te = await seeded(t, 4);
  const paths = runPaths(te.dataDir, 'r');
  // Drop the last complete record: the snapshot (count 4) now claims more than the journal holds.
  const lines = records(await readFile(paths.journal));
  await writeFile(
    paths.journal,
    `${lines
      .slice(0, 3)
      .map((r) => JSON.stringify(r))
      .join('\n')}\n`,
  );
  // Without the run index, which would call this a rollback first (run-index.test.ts).
  await dropRunIndex(te.dataDir);
  const b = await restart(t, te);
  const got = await b.req('GET', '/runs/r');
  t.equal(got.body['run'].status, 'quarantined');
  t.ok(
    got.body['run'].quarantine.reasons.some((r: string) => r.includes('run.json')),
    JSON.stringify(got.body['run'].quarantine.reasons),
  );
  const before = await b.journal('r');
  const w = await b.req('POST', '/runs/r/events', ev());
  t.equal(w.status, 409);
  t.equal(w.body['error'], 'run_quarantined');
  t.ok((await b.journal('r')).equals(before), 'journal bytes unchanged');
});

t.test("another run's snapshot is not accepted", async (t) => {
  const te = await makeTestEnv();
  const b = await startTestBridge(te);
  for (const run of ['r', 'other']) {
    for (let i = 0; i < 2; i++) t.equal((await b.req('POST', `/runs/${run}/events`, ev())).status, 201);
  }
  await b.close();
  await writeFile(runPaths(te.dataDir, 'r').snapshot, await readFile(runPaths(te.dataDir, 'other').snapshot));
  const b2 = await restart(t, te);
  t.equal((await b2.req('GET', '/runs/r')).body['run'].status, 'quarantined');
  t.equal((await b2.req('GET', '/runs/other')).body['run'].status, 'running');
});

t.test('an interrupted run creation (.tmp-run-*) is removed at startup', async (t) => {
  const te = await seeded(t, 1);
  const leftover = join(te.dataDir, `.tmp-run-${'0'.repeat(64)}-abcd`);
  await mkdir(leftover);
  await writeFile(join(leftover, 'run-config.json'), '{}');
  const b = await restart(t, te);
  t.notOk(
    (await readdir(te.dataDir)).some((n) => n.startsWith('.tmp-run-')),
    'leftover removed',
  );
  t.equal((await b.req('GET', '/runs')).body['runs'].length, 1);
});
