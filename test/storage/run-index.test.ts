import { once } from 'node:events';
import { cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { runPaths } from '../../src/storage/paths.js';
import { IndexFile, RUN_INDEX_FILE, readIndexFile } from '../../src/storage/run-index-file.js';
import {
  cleanup,
  ev,
  makeTestEnv,
  startTestBridge,
  type TestBridge,
  type TestEnv,
} from '../helpers/bridge.js';
import { spawnBridge } from '../helpers/spawned-bridge.js';

/**
 * The run index (storage/run-index-file.ts): `GET /runs` and startup read it instead of every
 * run's files; a run is authenticated in full when it is opened, and an entry that does not match
 * its run (a journal put back to an earlier state, an index edited or out of date) is caught then.
 */

const indexPath = (te: TestEnv) => join(te.dataDir, RUN_INDEX_FILE);

async function listAll(b: TestBridge): Promise<Record<string, any>[]> {
  const runs: Record<string, any>[] = [];
  for (let cursor = 0; ; cursor += 50) {
    const page = await b.req('GET', `/runs?limit=50&cursor=${cursor}`);
    t.equal(page.status, 200);
    runs.push(...page.body.runs);
    if (page.headers.get('x-harness-next-cursor') === null) return runs;
  }
}

async function withRuns(ids: string[], events = 1): Promise<TestEnv> {
  const te = await makeTestEnv();
  const b = await startTestBridge(te);
  for (const id of ids)
    for (let i = 0; i < events; i++)
      t.equal((await b.req('POST', `/runs/${id}/events`, ev({ id: `${id}-${i}` }))).status, 201);
  await b.close();
  return te;
}

/** Cuts the index file after the first half of its blocks (each `#<MAC> <length>` and its lines). */
async function cutIndexBlocks(path: string): Promise<void> {
  const data = await readFile(path);
  const ends: number[] = [];
  for (let at = 0; at < data.length; ) {
    const nl = data.indexOf(10, at);
    at = nl + 1 + Number(/ (\d+)$/.exec(data.toString('latin1', at, nl))![1]);
    ends.push(at);
  }
  t.ok(ends.length > 4, `${ends.length} blocks`);
  await writeFile(path, data.subarray(0, ends[Math.floor(ends.length / 2)]));
}

const post = (url: string, token: string, runId: string, body: object) =>
  fetch(`${url}/runs/${runId}/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-harness-bridge-token': token },
    body: JSON.stringify(body),
  }).then(async (r) => {
    await r.arrayBuffer();
    return r.status;
  });

t.test('kill -9 mid-creation: every acknowledged run is listed as it is, and no other', async (t) => {
  const te = await makeTestEnv();
  const token = te.env['HARNESS_BRIDGE_ACCESS_TOKEN']!;
  const { child, url } = await spawnBridge(t, te);
  const exited = once(child, 'exit');
  const acked = new Set<string>();
  const tried = new Set<string>();
  let killed = false;
  let n = 0;
  const worker = async () => {
    while (!killed) {
      const runId = `c-${n++}`;
      tried.add(runId);
      try {
        // Two events for some runs: their entries move after creation.
        const status = await post(url, token, runId, ev({ id: `${runId}-0` }));
        if (status === 201 && n % 3 === 0)
          t.equal(await post(url, token, runId, ev({ id: `${runId}-1`, message: 'again' })), 201);
        if (status === 201) acked.add(runId);
        else if (status !== 503) throw new Error(`unexpected ${status}`);
      } catch (err) {
        if (killed) return;
        throw err;
      }
    }
  };
  const killer = (async () => {
    while (acked.size < 300) await new Promise((r) => setImmediate(r));
    killed = true;
    child.kill('SIGKILL');
  })();
  await Promise.all([...Array.from({ length: 16 }, worker), killer]);
  t.equal((await exited)[1], 'SIGKILL', `killed with ${acked.size} runs acknowledged`);
  // A kill keeps the page cache; a power loss could also take the index blocks written since the
  // last checkpoint (none synced yet): keep only the first half of them.
  await cutIndexBlocks(indexPath(te));

  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  const listed = await listAll(b);
  const ids = new Set(listed.map((r) => r.id as string));
  t.same(
    [...acked].filter((id) => !ids.has(id)),
    [],
    `all ${acked.size} acknowledged runs are listed`,
  );
  t.same(
    [...ids].filter((id) => !tried.has(id)),
    [],
    'no run is listed that was never created',
  );
  for (const summary of listed) {
    const view = (await b.req('GET', `/runs/${summary.id}?eventLimit=1`)).body.run;
    t.equal(view.status, 'running', `${summary.id} opens`);
    if (view.eventCount !== summary.eventCount || view.currentNodeId !== summary.currentNodeId)
      t.fail(`${summary.id}: listed ${summary.eventCount} events, holds ${view.eventCount}`);
  }
  t.same(
    (await listAll(b)).map((r) => [r.id, r.eventCount]),
    listed.map((r) => [r.id, r.eventCount]),
    'opening the runs changed nothing the list shows',
  );
});

t.test('a run is authenticated when it is opened, not at startup', async (t) => {
  const te = await withRuns(['a', 'b']);
  // A config whose seal fails: startup reads the index, not the config.
  const config = runPaths(te.dataDir, 'a').config;
  const sealed = await readFile(config, 'utf8');
  await writeFile(
    config,
    sealed.replace(/"mac":"(.)/, (_, c: string) => `"mac":"${c === '0' ? '1' : '0'}`),
  );
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  t.same(
    (await listAll(b)).map((r) => `${r.id} ${r.status}`),
    ['a running', 'b running'],
    'listed from the index',
  );
  const before = await b.journal('a');
  const read = await b.req('GET', '/runs/a');
  t.equal(read.body.run.status, 'quarantined', 'the run itself fails');
  t.match(read.body.run.quarantine.reasons, [/^run-config\.json: /]);
  t.equal((await b.req('POST', '/runs/a/events', ev())).status, 409, 'and refuses writes');
  t.ok((await b.journal('a')).equals(before), 'journal bytes unchanged');
  t.same(
    (await listAll(b)).map((r) => `${r.id} ${r.status}`),
    ['a quarantined', 'b running'],
    'the list agrees from then on',
  );
});

t.test('an index that fails authentication is not used: startup reads every run', async (t) => {
  const te = await withRuns(['a', 'b'], 2);
  const text = await readFile(indexPath(te), 'utf8');
  t.match(text, /,2,0\]/);
  await writeFile(indexPath(te), text.replace(',2,0]', ',7,0]'));
  const logged: string[] = [];
  const b = await startTestBridge(te, { log: (m) => logged.push(m) });
  t.match(logged.join('\n'), /run index not used \(a block fails authentication\)/);
  t.same(
    (await listAll(b)).map((r) => [r.id, r.eventCount]),
    [
      ['a', 2],
      ['b', 2],
    ],
    'the runs as their journals hold them',
  );
  await b.close();
  const again = await readIndexFile(
    indexPath(te),
    Buffer.from(te.env['HARNESS_BRIDGE_INTEGRITY_KEY']!),
    te.env['HARNESS_REVIEW_TRUST_SHA256']!,
  );
  t.equal(again.kind, 'read', 'and the index was written afresh');
  t.equal(again.kind === 'read' && again.runs.size, 2);
});

t.test('an index put back to an older copy is caught up when the run is opened', async (t) => {
  const te = await withRuns(['a', 'b']);
  const older = await readFile(indexPath(te));
  const b = await startTestBridge(te);
  for (let i = 1; i < 4; i++)
    t.equal((await b.req('POST', '/runs/a/events', ev({ id: `a+${i}` }))).status, 201);
  t.equal((await b.req('POST', '/runs/c/events', ev({ id: 'c-0' }))).status, 201);
  await b.close();
  await writeFile(indexPath(te), older);
  const b2 = await startTestBridge(te);
  t.teardown(() => cleanup(b2));
  t.same(
    (await listAll(b2)).map((r) => r.id),
    ['a', 'b', 'c'],
    'a run the older index lacks is read from its directory',
  );
  const read = (await b2.req('GET', '/runs/a')).body.run;
  t.equal(read.status, 'running', 'a journal ahead of its entry is no rollback');
  t.equal(read.eventCount, 4);
  t.equal((await listAll(b2))[0]!.eventCount, 4, 'the entry caught up');
});

t.test('a run directory put back to an earlier state is quarantined as rolled back', async (t) => {
  const te = await withRuns(['rb', 'ok'], 2);
  const saved = join(te.dir, 'saved-rb');
  await cp(runPaths(te.dataDir, 'rb').dir, saved, { recursive: true });
  const b = await startTestBridge(te);
  for (const id of ['rb', 'ok'])
    for (let i = 2; i < 4; i++)
      t.equal((await b.req('POST', `/runs/${id}/events`, ev({ id: `${id}-${i}` }))).status, 201);
  await b.close();
  // The journal cut at a record boundary, with the snapshot and config that matched it then.
  await rm(runPaths(te.dataDir, 'rb').dir, { recursive: true });
  await cp(saved, runPaths(te.dataDir, 'rb').dir, { recursive: true });
  const b2 = await startTestBridge(te);
  t.teardown(() => cleanup(b2));
  const before = await b2.journal('rb');
  const read = (await b2.req('GET', '/runs/rb')).body.run;
  t.equal(read.status, 'quarantined');
  t.match(read.quarantine.reasons, [/^rolled back to record 2 of 4/]);
  const w = await b2.req('POST', '/runs/rb/events', ev({ id: 'rb-x' }));
  t.equal(w.status, 409);
  t.equal(w.body.error, 'run_quarantined');
  t.ok((await b2.journal('rb')).equals(before), 'journal bytes unchanged');
  const ok = (await b2.req('GET', '/runs/ok')).body.run;
  t.equal(ok.status, 'running', 'the untouched run is served');
  t.equal(ok.eventCount, 4);
});

t.test('a run directory removed or added behind the bridge', async (t) => {
  const te = await withRuns(['gone', 'kept']);
  // Another data directory under the same credentials: its run is moved in while both are stopped.
  const other: TestEnv = {
    ...te,
    dataDir: join(te.dir, 'data2'),
    env: { ...te.env, HARNESS_DATA_DIR: join(te.dir, 'data2') },
  };
  await mkdir(other.dataDir);
  const ob = await startTestBridge(other);
  t.equal((await ob.req('POST', '/runs/added/events', ev({ id: 'added-0' }))).status, 201);
  await ob.close();
  await cp(runPaths(other.dataDir, 'added').dir, runPaths(te.dataDir, 'added').dir, { recursive: true });
  await rm(runPaths(te.dataDir, 'gone').dir, { recursive: true });

  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  t.same(
    (await listAll(b)).map((r) => `${r.id} ${r.status}`),
    ['kept running', 'added running'],
    'a removed (archived) run is gone, as before the index',
  );
  t.equal((await b.req('GET', '/runs/gone')).status, 404);
  t.equal(
    (await b.req('POST', '/runs/gone/events', ev({ id: 'gone-1' }))).status,
    201,
    'its ID is free again',
  );
  t.equal((await b.req('GET', '/runs/gone')).body.run.eventCount, 1, 'for a new run');
  t.equal(
    (await b.req('GET', '/runs/added')).body.run.eventCount,
    1,
    'the added run is read in full and served',
  );
});

t.test('a creation burst and a listing after restart fit a 256 MiB heap', async (t) => {
  const RUNS = 3000;
  const te = await makeTestEnv();
  const token = te.env['HARNESS_BRIDGE_ACCESS_TOKEN']!;
  const heap = { node: ['--max-old-space-size=256'] };
  const first = await spawnBridge(t, te, heap);
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let i = next++; i < RUNS; i = next++)
        if ((await post(first.url, token, `h-${i}`, ev({ id: `h-${i}` }))) !== 201)
          throw new Error(`run ${i}`);
    }),
  );
  t.equal(first.child.exitCode, null, `alive after creating ${RUNS} runs`);
  const stopped = once(first.child, 'exit');
  first.child.kill('SIGTERM');
  t.equal((await stopped)[0], 0, 'a clean stop');
  const second = await spawnBridge(t, te, heap);
  let seen = 0;
  for (let cursor = 0; cursor < RUNS; cursor += 50) {
    const r = await fetch(`${second.url}/runs?limit=50&cursor=${cursor}`, {
      headers: { 'x-harness-bridge-token': token },
    });
    t.equal(r.status, 200);
    seen += ((await r.json()) as { runs: unknown[] }).runs.length;
  }
  t.equal(seen, RUNS, 'every run listed after the restart');
  t.equal(second.child.exitCode, null, 'alive after listing them all');
});

t.test(
  'a clean shutdown leaves the index one entry per run, packed in blocks a start reads whole',
  async (t) => {
    const te = await withRuns(['c', 'a', 'b'], 3);
    const key = Buffer.from(te.env['HARNESS_BRIDGE_INTEGRITY_KEY']!);
    const pin = te.env['HARNESS_REVIEW_TRUST_SHA256']!;
    const read = await readIndexFile(indexPath(te), key, pin);
    t.equal(read.kind, 'read');
    if (read.kind !== 'read') return;
    t.equal(
      read.blocks,
      2,
      "the pin's block and one packed block: the appended ones were rewritten at shutdown",
    );
    t.match((await readFile(indexPath(te))).toString('latin1'), /\n=packed\n/, 'the entries packed');
    t.equal(read.lines, 4, 'the pin line and one entry per run, none superseded');
    t.same(
      [...read.runs.values()].map((e) => [e.runId, e.count]),
      [
        ['c', 3],
        ['a', 3],
        ['b', 3],
      ],
      'in creation order, each at its durable head',
    );
    const b = await startTestBridge(te);
    t.same(
      (await listAll(b)).map((r) => [r.id, r.eventCount]),
      [
        ['c', 3],
        ['a', 3],
        ['b', 3],
      ],
    );
    await b.close();
  },
);

t.test('an appended block larger than a read at startup is read whole', async (t) => {
  const te = await makeTestEnv();
  const key = Buffer.from(te.env['HARNESS_BRIDGE_INTEGRITY_KEY']!);
  const pin = te.env['HARNESS_REVIEW_TRUST_SHA256']!;
  await mkdir(te.dataDir, { recursive: true });
  const path = indexPath(te);
  const file = await IndexFile.open(path, key, pin, { kind: 'absent' });
  await file.rewrite([]);
  const summary = JSON.stringify([
    `title ${'x'.repeat(200)}`,
    'running',
    'live',
    false,
    'now',
    'intake',
    1,
    0,
  ]);
  const entries = Array.from({ length: 20_000 }, (_, i) => ({
    runId: `run-${i}`,
    createdAt: new Date(Date.UTC(2026, 0, 1) + i).toISOString(),
    count: i,
    head: i % 2 === 0 ? null : 'ab'.repeat(32),
    summary: i % 3 === 0 ? null : summary,
  }));
  await file.append(entries);
  await file.append([], ['run-7']);
  await file.sync();
  await file.close();
  t.ok((await readFile(path)).length > 5 * 1024 * 1024, 'the block is over 5 MiB');
  const read = await readIndexFile(path, key, pin);
  t.equal(read.kind, 'read');
  if (read.kind !== 'read') return;
  t.equal(read.runs.size, 19_999, 'every entry but the one removed');
  t.equal(read.runs.has('run-7'), false);
  t.same(read.runs.get('run-19998'), entries[19_998]);
  t.same(read.runs.get('run-19999'), entries[19_999]);
  t.equal(read.dirs?.size, 19_999, 'each run directory named once');
});
