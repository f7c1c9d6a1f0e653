import { readFile, writeFile } from 'node:fs/promises';
import t, { type Test as Tap } from 'tap';
import { runPaths } from '../src/storage/paths.js';
import {
  cleanup,
  ev,
  makeTestEnv,
  startTestBridge,
  type TestBridge,
  type TestEnv,
} from './helpers/bridge.js';
import { expectRejected } from './helpers/expect.js';

/**
 * SPEC Run (HMAC-authenticated config, snapshot and journal) and CONTRACT 7: one flipped byte in
 * any of the three files quarantines that run with the reason; every other run keeps working;
 * writes to the quarantined run are 409 run_quarantined and store nothing.
 */

/** Flips one bit of the byte at `needle`+`at`, keeping the file valid JSON (a forged value, not a parse error). */
async function flip(path: string, needle: string, at = needle.length - 1): Promise<void> {
  const buf = await readFile(path);
  const i = buf.indexOf(needle);
  if (i < 0) throw new Error(`${needle} not in ${path}`);
  buf[i + at]! ^= 0x01;
  await writeFile(path, buf);
}

async function seed(): Promise<{ te: TestEnv; b: TestBridge }> {
  const te = await makeTestEnv();
  const b = await startTestBridge(te);
  for (const run of ['victim', 'bystander']) {
    t.equal((await b.req('POST', '/runs', { id: run, title: 'seeded' })).status, 201);
    for (let i = 0; i < 3; i++) {
      t.equal(
        (await b.req('POST', `/runs/${run}/events`, ev({ id: `${run}-${i}`, message: 'msg' }))).status,
        201,
      );
    }
  }
  // A graceful close writes the snapshots (run.json) of open runs.
  await b.close();
  return { te, b };
}

async function expectQuarantined(t: Tap, b: TestBridge, file: string) {
  const got = await b.req('GET', '/runs/victim');
  t.equal(got.status, 200, JSON.stringify(got.body).slice(0, 300));
  t.equal(got.body['run'].status, 'quarantined');
  t.ok(
    got.body['run'].quarantine.reasons.some((r: string) => r.includes(file)),
    `the reason names ${file}: ${JSON.stringify(got.body['run'].quarantine?.reasons)}`,
  );
  t.same(got.body['events'], [], 'no event of an unauthenticated journal is served');
  const list = await b.req('GET', '/runs');
  const byId = Object.fromEntries(list.body['runs'].map((s: any) => [s.id, s.status]));
  t.equal(byId['victim'], 'quarantined', 'the listing agrees');
  t.equal(byId['bystander'], 'running', 'the other run is listed as running');
  // Writes are refused and store nothing.
  await expectRejected(
    t,
    b,
    'victim',
    () => b.req('POST', '/runs/victim/events', ev()),
    409,
    'run_quarantined',
  );
  await expectRejected(
    t,
    b,
    'victim',
    () => b.req('POST', '/runs', { id: 'victim', title: 'seeded' }),
    409,
    'run_quarantined',
  );
  // The other run keeps working.
  const other = await b.req('GET', '/runs/bystander');
  t.equal(other.body['run'].status, 'running');
  t.equal(other.body['events'].length, 3);
  t.equal((await b.req('POST', '/runs/bystander/events', ev())).status, 201);
}

t.test('a flipped byte in run-config.json', async (t) => {
  const { te } = await seed();
  await flip(runPaths(te.dataDir, 'victim').config, '"title":"seeded');
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  await expectQuarantined(t, b, 'run-config.json');
});

t.test('a flipped byte in run.json', async (t) => {
  const { te } = await seed();
  await flip(runPaths(te.dataDir, 'victim').snapshot, '"eventCount":3', '"eventCount":'.length);
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  await expectQuarantined(t, b, 'run.json');
});

t.test('a flipped byte in events.jsonl', async (t) => {
  const { te } = await seed();
  await flip(runPaths(te.dataDir, 'victim').journal, '"message":"msg');
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  await expectQuarantined(t, b, 'events.jsonl');
});

t.test('a flipped final newline of events.jsonl is not mistaken for a torn write', async (t) => {
  // Cutting the last record as torn would silently drop an acknowledged event: the snapshot a
  // clean close writes is bound to the whole journal, so it is then ahead of it.
  const { te } = await seed();
  const path = runPaths(te.dataDir, 'victim').journal;
  const buf = await readFile(path);
  t.equal(buf.at(-1), 0x0a);
  buf[buf.length - 1] = 0x20;
  await writeFile(path, buf);
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  await expectQuarantined(t, b, 'run.json is ahead of the journal');
});

t.test('a byte flipped in events.jsonl under a running bridge is caught on the next read', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  for (const run of ['victim', 'bystander']) {
    for (let i = 0; i < 3; i++)
      t.equal((await b.req('POST', `/runs/${run}/events`, ev({ message: 'msg' }))).status, 201);
  }
  await flip(runPaths(b.t.dataDir, 'victim').journal, '"message":"msg');
  const first = await b.req('GET', '/runs/victim?eventCursor=0');
  t.equal(
    first.status,
    200,
    `the detecting read answers like later reads: ${JSON.stringify(first.body).slice(0, 200)}`,
  );
  t.equal(first.body['run'].status, 'quarantined');
  t.notOk(
    (first.body['events'] ?? []).some((e: any) => e.message === 'msf'),
    'the forged record is never served',
  );
  await expectQuarantined(t, b, 'events.jsonl');
});

t.test('a record made unparseable under a running bridge is caught on the next read', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  for (const run of ['victim', 'bystander']) {
    for (let i = 0; i < 3; i++)
      t.equal((await b.req('POST', `/runs/${run}/events`, ev({ message: 'msg' }))).status, 201);
  }
  // The first byte of the page's first record: '{' becomes 'z'.
  await flip(runPaths(b.t.dataDir, 'victim').journal, '{"seq":0', 0);
  const first = await b.req('GET', '/runs/victim?eventCursor=0');
  t.equal(
    first.status,
    200,
    `the detecting read answers like later reads: ${JSON.stringify(first.body).slice(0, 200)}`,
  );
  t.equal(first.body['run'].status, 'quarantined');
  await expectQuarantined(t, b, 'events.jsonl');
});

t.test('journal records moved, dropped or reordered', async (t) => {
  const cases: [string, (victim: string, bystander: string) => Promise<void>][] = [
    ['a journal copied from another run', async (v, by) => writeFile(v, await readFile(by))],
    [
      'a record dropped from the middle',
      async (v) => {
        const lines = (await readFile(v, 'utf8')).split('\n');
        lines.splice(1, 1);
        await writeFile(v, lines.join('\n'));
      },
    ],
    [
      'two records swapped',
      async (v) => {
        const lines = (await readFile(v, 'utf8')).split('\n');
        [lines[0], lines[1]] = [lines[1]!, lines[0]!];
        await writeFile(v, lines.join('\n'));
      },
    ],
  ];
  for (const [label, tamper] of cases) {
    t.test(label, async (t) => {
      const { te } = await seed();
      await tamper(runPaths(te.dataDir, 'victim').journal, runPaths(te.dataDir, 'bystander').journal);
      const b = await startTestBridge(te);
      t.teardown(() => cleanup(b));
      const got = await b.req('GET', '/runs/victim');
      t.equal(got.body['run'].status, 'quarantined');
      await expectRejected(
        t,
        b,
        'victim',
        () => b.req('POST', '/runs/victim/events', ev()),
        409,
        'run_quarantined',
      );
      t.equal((await b.req('GET', '/runs/bystander')).body['run'].status, 'running');
    });
  }
});

t.test('a config sealed under another integrity key is not trusted', async (t) => {
  const { te } = await seed();
  // Same files, a different key: every MAC fails, nothing is reinterpreted as trusted state.
  const { secret } = await import('./helpers/bridge.js');
  const b = await startTestBridge({ ...te, env: { ...te.env, HARNESS_BRIDGE_INTEGRITY_KEY: secret() } });
  t.teardown(() => cleanup(b));
  const list = await b.req('GET', '/runs');
  t.same(
    list.body['runs'].map((s: any) => s.status),
    ['quarantined', 'quarantined'],
  );
  await expectRejected(
    t,
    b,
    'victim',
    () => b.req('POST', '/runs/victim/events', ev()),
    409,
    'run_quarantined',
  );
});
