import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { RUN_DIRECTORY_MAX } from '../../src/contract/index.js';
import { cleanup, ev, makeTestEnv, startTestBridge, startupFailure } from '../helpers/bridge.js';
import { expectRejected } from '../helpers/expect.js';
import { fileStoreOnly, suiteDatabase } from '../helpers/pg-store.js';

/**
 * SPEC Limits (directory candidates): the data directory holds at most `maxRuns` runs
 * (RUN_DIRECTORY_MAX; made small here). A creation past it, by POST /runs or a first event, is
 * 409 run_history_full with nothing written, so the bridge never writes a directory its own
 * startup refuses; and startup does not count the `.tmp-run-*` leftovers of interrupted creations
 * (which it removes), so nobody can lock the bridge out by leaving them behind.
 */
const maxRuns = 3;
const storage = { maxRuns };
const tmpName = (i: number) => `.tmp-run-${'0'.repeat(64)}-${i.toString(16).padStart(8, '0')}`;

t.test('the default ceiling is RUN_DIRECTORY_MAX and health reports the enforced one', async (t) => {
  const b = await startTestBridge(undefined, { storage });
  t.teardown(() => cleanup(b));
  t.equal(RUN_DIRECTORY_MAX, 100_000);
  t.equal((await b.req('GET', '/health')).body['limits']['maxRuns'], maxRuns);
});

t.test('a run past the ceiling: 409 run_history_full, nothing written; a restart still starts', async (t) => {
  const te = await makeTestEnv();
  let b = await startTestBridge(te, { storage });
  t.teardown(() => cleanup(b));
  t.equal((await b.req('POST', '/runs', { id: 'r1' })).status, 201);
  t.equal((await b.req('POST', '/runs', { id: 'r2', artifactRoot: te.artifactRoot })).status, 201);
  t.equal((await b.req('POST', '/runs/r3/events', ev())).status, 201, 'a first event creates the third');

  const refusals = async () => {
    const before = await readdir(te.dataDir);
    await expectRejected(t, b, 'r4', () => b.req('POST', '/runs', { id: 'r4' }), 409, 'run_history_full');
    await expectRejected(
      t,
      b,
      'r5',
      () => b.req('POST', '/runs/r5/events', ev({ artifactRoot: te.artifactRoot })),
      409,
      'run_history_full',
    );
    t.same(await readdir(te.dataDir), before, 'the data directory holds what it did');
    t.equal((await b.req('GET', '/runs/r4')).status, 404);
    t.equal((await b.req('GET', '/runs/r5')).status, 404);
    t.equal((await b.req('GET', '/runs')).headers.get('x-harness-page-total'), String(maxRuns));
    // The runs there carry on.
    t.equal((await b.req('POST', '/runs', { id: 'r1' })).status, 200);
    t.equal((await b.req('POST', '/runs/r1/events', ev())).status, 201);
  };
  await refusals();

  await b.close();
  b = await startTestBridge(te, { storage });
  t.equal(b.ctx.store.size, maxRuns, 'the bridge starts from the full directory it wrote');
  await refusals();
});

t.test('concurrent creations never pass the ceiling together', async (t) => {
  const b = await startTestBridge(undefined, { storage });
  t.teardown(() => cleanup(b));
  t.equal((await b.req('POST', '/runs', { id: 'c0' })).status, 201);
  t.equal((await b.req('POST', '/runs', { id: 'c1' })).status, 201);
  const answers = await Promise.all(
    Array.from({ length: 6 }, (_, i) =>
      i % 2 === 0 ? b.req('POST', '/runs', { id: `n${i}` }) : b.req('POST', `/runs/n${i}/events`, ev()),
    ),
  );
  const statuses = answers.map((a) => a.status).sort();
  t.same(statuses, [201, 409, 409, 409, 409, 409], JSON.stringify(statuses));
  t.equal(b.ctx.store.size, maxRuns);
  if (suiteDatabase() === undefined)
    t.equal((await readdir(b.t.dataDir)).filter((n) => n.startsWith('run-')).length, maxRuns);
});

t.test('a refused first event frees its place', async (t) => {
  const b = await startTestBridge(undefined, { storage });
  t.teardown(() => cleanup(b));
  t.equal((await b.req('POST', '/runs', { id: 'f0' })).status, 201);
  t.equal((await b.req('POST', '/runs', { id: 'f1' })).status, 201);
  // Created for the event, then refused (no artifact root to verify against) and removed.
  const refused = await b.req(
    'POST',
    '/runs/f2/events',
    ev({ type: 'artifact.written', nodeId: 'intake', artifact: 'run/intake.json' }),
  );
  t.equal(refused.status, 409, JSON.stringify(refused.body));
  t.equal(b.ctx.store.size, 2);
  t.equal((await b.req('POST', '/runs', { id: 'f3' })).status, 201);
});

t.test(
  'startup does not count interrupted creations, and removes them',
  fileStoreOnly('run directories left by interrupted creations'),
  async (t) => {
    const te = await makeTestEnv();
    const b = await startTestBridge(te, { storage });
    for (let i = 0; i < maxRuns; i++) t.equal((await b.req('POST', '/runs', { id: `s${i}` })).status, 201);
    await b.close();
    for (let i = 0; i < maxRuns * 4; i++) await mkdir(join(te.dataDir, tmpName(i)));
    const again = await startTestBridge(te, { storage });
    t.teardown(() => cleanup(again));
    t.same(
      (await readdir(te.dataDir)).filter((n) => n.startsWith('.tmp-run-')),
      [],
      'the leftovers are removed',
    );
    t.equal(again.ctx.store.size, maxRuns);
  },
);

t.test(
  'startup refuses more runs than the ceiling, or as many foreign entries',
  fileStoreOnly('the data directory holding more run directories than the ceiling'),
  async (t) => {
    const te = await makeTestEnv();
    const other = await makeTestEnv();
    t.teardown(async () => {
      await rm(te.dir, { recursive: true, force: true });
      await rm(other.dir, { recursive: true, force: true });
    });
    const b = await startTestBridge(te, { storage: { maxRuns: maxRuns + 1 } });
    for (let i = 0; i <= maxRuns; i++) t.equal((await b.req('POST', '/runs', { id: `o${i}` })).status, 201);
    await b.close();
    const err = await startupFailure({ env: te.env, storage });
    t.match(String(err), `holds more than ${maxRuns} runs`);
    t.notOk(String(err).includes('\n'), 'one line');

    await mkdir(other.dataDir);
    for (let i = 0; i <= maxRuns; i++) await mkdir(join(other.dataDir, `unrelated-${i}`));
    t.match(String(await startupFailure({ env: other.env, storage })), 'entries that are not runs');
  },
);
