import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { sealRecord } from '../../src/storage/journal-record.js';
import { GENESIS } from '../../src/storage/mac.js';
import { runPaths } from '../../src/storage/paths.js';
import { cleanup, ev, makeTestEnv, startTestBridge } from '../helpers/bridge.js';
import { runVerify } from '../helpers/cli.js';
import { dropRunIndex } from '../helpers/run-index.js';

/**
 * run-config.json may be sealed twice (at POST /runs, then with the root or adapter the first
 * event or a repeated POST /runs adds), and both seals authenticate. Record 0 of the journal
 * chains from the config's MAC, so an older seal put back after the run started (a commissioned
 * run turned into an ordinary one, its adapter and root gone) no longer matches the journal: the
 * run is quarantined, and `harness verify` reports it tampered. Journals written before this
 * binding (record 0 chained from GENESIS) still open.
 */

t.test('an older config put back after the first event quarantines the run', async (t) => {
  const te = await makeTestEnv();
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  t.equal((await b.req('POST', '/runs', { id: 'c' })).status, 201);
  const configPath = runPaths(te.dataDir, 'c').config;
  const unsealed = await readFile(configPath);
  await writeFile(
    join(te.artifactRoot, 'project-adapter.json'),
    JSON.stringify({ finishLineAssurance: { required: true } }),
  );
  const first = await b.req('POST', '/runs/c/events', ev({ artifactRoot: te.artifactRoot }));
  t.equal(first.status, 201);
  t.equal(first.body.run.commissioned, true, 'the first event made the run commissioned');
  t.equal((await b.req('POST', '/runs/c/events', ev({ type: 'gate.fired' }))).status, 201);
  t.equal((await b.req('POST', '/runs/d/events', ev())).status, 201);
  await b.close();

  await writeFile(configPath, unsealed);
  const again = await startTestBridge(te);
  t.teardown(() => again.close());
  const got = (await again.req('GET', '/runs/c')).body.run;
  t.equal(got.status, 'quarantined', 'not served as an ordinary run');
  t.match(got.quarantine.reasons, [
    'events.jsonl: journal record 0 was not started under this run-config.json',
  ]);
  const journal = await readFile(runPaths(te.dataDir, 'c').journal);
  t.equal((await again.req('POST', '/runs/c/events', ev())).body.error, 'run_quarantined');
  t.same(await readFile(runPaths(te.dataDir, 'c').journal), journal, 'the refused event stored nothing');
  t.equal((await again.req('GET', '/runs/d')).body.run.eventCount, 1, 'the other run is served');
  await again.close();

  const verified = await runVerify(te.env);
  t.equal(verified.code, 1, 'harness verify fails');
  t.match(
    verified.stdout,
    /TAMPERED c: events\.jsonl: journal record 0 was not started under this run-config\.json/,
  );
});

t.test('a journal whose record 0 chains from GENESIS (written before the binding) still opens', async (t) => {
  const te = await makeTestEnv();
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  t.equal((await b.req('POST', '/runs/old/events', ev({ message: 'first' }))).status, 201);
  await b.close();
  const journal = runPaths(te.dataDir, 'old').journal;
  const record = JSON.parse(await readFile(journal, 'utf8'));
  t.not(record.prev, GENESIS, 'a new journal chains from its config');
  const key = Buffer.from(te.env['HARNESS_BRIDGE_INTEGRITY_KEY']!, 'utf8');
  await writeFile(journal, sealRecord(key, 'old', 0, GENESIS, record.event, null, null).line);
  // The snapshot written at close is bound to the record replaced here; the journal alone rules.
  await rm(runPaths(te.dataDir, 'old').snapshot);
  // A journal from before the binding is also from before the run index, which holds this one's
  // head (and would call the rewritten record another journal).
  await dropRunIndex(te.dataDir);

  const again = await startTestBridge(te);
  t.teardown(() => again.close());
  t.equal((await again.req('POST', '/runs/old/events', ev({ message: 'second' }))).status, 201);
  const got = (await again.req('GET', '/runs/old')).body.run;
  t.equal(got.status, 'running');
  t.same(
    got.events.map((e: { message: string }) => e.message),
    ['first', 'second'],
  );
});

t.test(
  'a config resealed before the first event (a repeated POST /runs adding the root) still opens',
  async (t) => {
    const te = await makeTestEnv();
    const b = await startTestBridge(te);
    t.teardown(() => cleanup(b));
    t.equal((await b.req('POST', '/runs', { id: 'r' })).status, 201);
    const before = await readFile(runPaths(te.dataDir, 'r').config, 'utf8');
    const repeat = await b.req('POST', '/runs', { id: 'r', artifactRoot: te.artifactRoot });
    t.equal(repeat.status, 200);
    t.not(await readFile(runPaths(te.dataDir, 'r').config, 'utf8'), before, 'the config was resealed');
    t.equal((await b.req('POST', '/runs/r/events', ev())).status, 201);
    await b.close();
    const again = await startTestBridge(te);
    t.teardown(() => again.close());
    const got = (await again.req('GET', '/runs/r')).body.run;
    t.equal(got.status, 'running', 'record 0 chains from the config as resealed');
    t.equal(got.eventCount, 1);
  },
);
