import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { BridgeCall } from '../../src/sources/client.js';
import { readRunInput } from '../../src/sources/database.js';
import { cleanup, ev, makeTestEnv, startTestBridge, type TestBridge } from '../helpers/bridge.js';
import { bridgeClientEnv, expectRefused, runCli } from '../helpers/cli.js';
import { clusterOrSkip } from '../helpers/pg-store.js';
import { startWithQuarantinedRun } from '../helpers/quarantine.js';

/**
 * SPEC 9's replay row `database` (issue 31): `harness replay --run RUN_ID` reads a run the bridge
 * holds through its HTTP API, page by page, and posts it as a new replay run of source database.
 * A quarantined or unknown run is refused with nothing posted. The CLI is the built one.
 */

type View = Record<string, unknown>;

/** Every event of a run through the API (several pages), as GET /runs/:id serves them. */
async function allEvents(b: TestBridge, runId: string): Promise<View[]> {
  const events: View[] = [];
  for (let cursor: string | null = '0'; cursor !== null; ) {
    const r = await b.req('GET', `/runs/${runId}?eventCursor=${cursor}&eventLimit=200`);
    events.push(...(r.body['run'].events as View[]));
    cursor = r.body['run'].eventPage.nextCursor;
  }
  return events;
}

const withoutModeAndSource = (events: View[]) =>
  events.map(({ runMode: _m, eventSource: _s, ...rest }) => rest);

const journalLines = async (b: TestBridge, runId: string) =>
  (await b.journal(runId))
    .toString()
    .split('\n')
    .filter((l) => l !== '');

/** A live run with a verified claim and more events than one page holds. */
async function seedLiveRun(t: Test, b: TestBridge, runId: string, events: number): Promise<void> {
  await mkdir(join(b.t.artifactRoot, 'run'), { recursive: true });
  await writeFile(join(b.t.artifactRoot, 'run', 'intake.json'), '{"intake":1}\n');
  const created = await b.req('POST', '/runs', { id: runId, artifactRoot: b.t.artifactRoot });
  t.equal(created.status, 201);
  const claim = ev({ id: 'w0', type: 'artifact.written', artifact: 'run/intake.json' });
  t.equal((await b.req('POST', `/runs/${runId}/events`, claim)).status, 201);
  for (let i = 1; i < events; i++) {
    const r = await b.req('POST', `/runs/${runId}/events`, ev({ id: `n${i}`, message: `step ${i}` }));
    if (r.status !== 201) t.fail(`event ${i}: ${JSON.stringify(r.body)}`);
  }
}

async function replaysALiveRun(t: Test, b: TestBridge, events: number): Promise<void> {
  const env = bridgeClientEnv(b);
  await seedLiveRun(t, b, 'live-src', events);
  const before = await b.journal('live-src');
  const r = await runCli(['replay', '--run', 'live-src', '--artifact-root', b.t.artifactRoot], env);
  t.equal(r.exitCode, 0, r.stderr);
  t.same(JSON.parse(r.stdout), {
    runId: 'live-src-replay-1',
    events,
    source: 'database',
    artifactRoot: b.t.artifactRoot,
  });
  const source = await allEvents(b, 'live-src');
  const copy = await allEvents(b, 'live-src-replay-1');
  t.equal(copy.length, events, 'every page was read');
  t.same(withoutModeAndSource(copy), withoutModeAndSource(source), 'equal bar mode and source, claims too');
  t.ok(
    copy.every((e) => e['runMode'] === 'replay' && e['eventSource'] === 'database'),
    'each replayed event is a replay of source database',
  );
  const lines = await journalLines(b, 'live-src-replay-1');
  t.equal(lines.length, events);
  t.ok(
    lines.every((l) => l.includes('"eventSource":"database"')),
    'the journal records the source',
  );
  t.same(await b.journal('live-src'), before, 'the replayed run is unchanged');
}

t.test('replay --run on the file store', async (t) => {
  const te = await makeTestEnv();
  const b = await startWithQuarantinedRun(t, te, 'q-run', async (seeded) => {
    t.equal((await seeded.req('POST', '/runs/q-run/events', ev({ id: 'q1' }))).status, 201);
  });
  t.teardown(() => cleanup(b));
  const env = bridgeClientEnv(b);

  t.test('a live run, over more than one page of events', (t) => replaysALiveRun(t, b, 205));

  t.test('a quarantined run is refused and nothing is posted', async (t) => {
    const r = await runCli(['replay', '--run', 'q-run'], env);
    t.equal(r.exitCode, 1, r.stderr);
    t.match(r.stderr, /run q-run is quarantined/);
    t.equal((await b.req('GET', '/runs/q-run-replay-1')).status, 404, 'no run created');
    t.same(await journalLines(b, 'q-run-replay-1'), []);
  });

  t.test('an unknown run is refused and nothing is posted', async (t) => {
    const r = await runCli(['replay', '--run', 'nowhere', '--as', 'nowhere-r'], env);
    t.equal(r.exitCode, 1, r.stderr);
    t.match(r.stderr, /cannot replay run nowhere, nothing was posted: run_not_found/);
    t.equal((await b.req('GET', '/runs/nowhere-r')).status, 404);
    expectRefused(t, await runCli(['replay', '--run', 'not canonical'], env), '--run');
  });

  t.test('a claim with no root to verify it against is refused up front', async (t) => {
    expectRefused(
      t,
      await runCli(['replay', '--run', 'live-src', '--as', 'unrooted'], env),
      'event 0 (artifact.written) claims an artifact',
    );
    t.equal((await b.req('GET', '/runs/unrooted')).status, 404, 'no run created');
  });

  t.test('a refusal mid-way names the event by its seq', async (t) => {
    const empty = join(te.dir, 'empty-root');
    await mkdir(empty);
    const r = await runCli(['replay', '--run', 'live-src', '--artifact-root', empty, '--as', 'midway'], env);
    t.equal(r.exitCode, 1, r.stderr);
    t.match(r.stderr, /event 0 \(run midway\): the bridge refused it: artifact_verification_failed/);
    t.equal((await b.req('GET', '/runs/midway')).body['run'].eventCount, 0, 'nothing after it posted');
  });

  t.test('FILE and --run are exclusive, and one is required', async (t) => {
    const file = join(te.dir, 'one.jsonl');
    await writeFile(file, `${JSON.stringify(ev({ id: 'x1' }))}\n`);
    expectRefused(
      t,
      await runCli(['replay', file, '--run', 'live-src', '--as', 'both'], env),
      'exactly one of FILE and --run',
    );
    expectRefused(t, await runCli(['replay', '--as', 'neither'], env), 'exactly one of FILE and --run');
    expectRefused(
      t,
      await runCli(['replay', '--run', 'live-src', '--key', file, '--as', 'keyed'], env),
      '--key names the export key of a bundle FILE',
    );
    for (const id of ['both', 'neither', 'keyed']) t.equal((await b.req('GET', `/runs/${id}`)).status, 404);
  });
});

t.test('a page that would replay another history than the run’s is refused', async (t) => {
  const page = (events: object[], nextCursor: string | null): BridgeCall => {
    return async () => ({
      status: 200,
      body: { run: { status: 'running', events, eventPage: { nextCursor } } },
    });
  };
  const one = { seq: 0, ...ev({ id: 'e0', ts: '2025-01-01T00:00:00.000Z' }) };
  await t.rejects(readRunInput(page([one], '0'), 'r-1'), { exitCode: 1, message: /does not move on/ });
  const back = { ...one, id: 'e1' };
  await t.rejects(readRunInput(page([one, back], null), 'r-1'), {
    exitCode: 1,
    message: /out of journal order/,
  });
  // Quarantined between two reads: the second page says so, and nothing is replayed.
  let reads = 0;
  const quarantinedLater: BridgeCall = async () => {
    reads += 1;
    if (reads === 1) return page([one], '1')('', { method: 'GET' });
    return {
      status: 200,
      body: { run: { status: 'quarantined', events: [], eventPage: { nextCursor: null } } },
    };
  };
  await t.rejects(readRunInput(quarantinedLater, 'r-1'), { exitCode: 1, message: /r-1 is quarantined/ });
  const read = await readRunInput(page([one], null), 'r-1');
  t.same(
    read.events.map((e) => e.where),
    ['event 0'],
  );
});

const cluster = await clusterOrSkip('replay --run against PostgreSQL');
if (cluster !== null) {
  t.test('replay --run on the PostgreSQL store', async (t) => {
    const b = await startTestBridge(await makeTestEnv({ database: cluster.url }));
    t.teardown(() => cleanup(b));
    await replaysALiveRun(t, b, 3);
  });
}
