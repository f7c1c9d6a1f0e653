import { copyFile, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
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
  t.same(got.body['run'].events, [], 'no event of an unauthenticated journal is served');
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
  t.equal(other.body['run'].events.length, 3);
  t.equal((await b.req('POST', '/runs/bystander/events', ev())).status, 201);
}

t.test('a flipped byte in run-config.json', async (t) => {
  const { te } = await seed();
  await flip(runPaths(te.dataDir, 'victim').config, '"title":"seeded');
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  // The config's own MAC is what fails (the journal's binding to it fails as well, but a reason
  // naming only that would mean the config itself was never checked).
  await expectQuarantined(t, b, 'run-config.json');
  const got = await b.req('GET', '/runs/victim');
  t.match(got.body['run'].quarantine.reasons, [/^run-config\.json: .*fails authentication/]);
});

t.test('a flipped byte in the run-config.json of a run without events', async (t) => {
  // No journal record binds this config, so its own MAC is the only thing that can catch a forged
  // title: the run must not open with it.
  const te = await makeTestEnv();
  let b = await startTestBridge(te);
  for (const run of ['victim', 'bystander']) {
    t.equal((await b.req('POST', '/runs', { id: run, title: 'seeded' })).status, 201);
  }
  for (let i = 0; i < 3; i++)
    t.equal((await b.req('POST', '/runs/bystander/events', ev({ message: 'msg' }))).status, 201);
  await b.close();
  await flip(runPaths(te.dataDir, 'victim').config, '"title":"seeded');
  b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  const got = await b.req('GET', '/runs/victim');
  t.equal(got.body['run'].status, 'quarantined', 'the forged title is never served');
  t.not(got.body['run'].title, 'seedee', 'flip() turned the title seeded into seedee');
  t.match(got.body['run'].quarantine.reasons, [/^run-config\.json: .*fails authentication/]);
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
  // The run index, which holds the journal's durable head, says so first (run-index.test.ts).
  await expectQuarantined(t, b, 'rolled back to record 2 of 3');
});

/** A running bridge holding runs `victim` and `bystander`, three events each. */
async function twoRunsRunning(t: Tap): Promise<TestBridge> {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  for (const run of ['victim', 'bystander']) {
    for (let i = 0; i < 3; i++)
      t.equal((await b.req('POST', `/runs/${run}/events`, ev({ message: 'msg' }))).status, 201);
  }
  return b;
}

t.test('a byte flipped in events.jsonl under a running bridge is caught on the next read', async (t) => {
  const b = await twoRunsRunning(t);
  await flip(runPaths(b.t.dataDir, 'victim').journal, '"message":"msg');
  const first = await b.req('GET', '/runs/victim?eventCursor=0');
  t.equal(
    first.status,
    200,
    `the detecting read answers like later reads: ${JSON.stringify(first.body).slice(0, 200)}`,
  );
  t.equal(first.body['run'].status, 'quarantined');
  t.notOk(
    (first.body['run'].events ?? []).some((e: any) => e.message === 'msf'),
    'the forged record is never served',
  );
  await expectQuarantined(t, b, 'events.jsonl');
});

t.test('a record made unparseable under a running bridge is caught on the next read', async (t) => {
  const b = await twoRunsRunning(t);
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

t.test('a record MAC made unreadable as hex under a running bridge is caught on the next read', async (t) => {
  const b = await twoRunsRunning(t);
  // 'z' decodes to no byte at all: the MAC compared is shorter than any digest, never an error.
  const path = runPaths(b.t.dataDir, 'victim').journal;
  const buf = await readFile(path);
  buf[buf.indexOf('"mac":"') + 7] = 0x7a;
  await writeFile(path, buf);
  const first = await b.req('GET', '/runs/victim?eventCursor=0');
  t.equal(first.status, 200, JSON.stringify(first.body).slice(0, 200));
  t.equal(first.body['run'].status, 'quarantined');
  await expectQuarantined(t, b, 'events.jsonl');
});

t.test('a run quarantined under a running bridge is not sealed into a snapshot at shutdown', async (t) => {
  const te = await makeTestEnv();
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  const b = await startTestBridge(te);
  for (let i = 0; i < 3; i++)
    t.equal((await b.req('POST', '/runs/victim/events', ev({ message: 'msg' }))).status, 201);
  await flip(runPaths(te.dataDir, 'victim').journal, '"message":"msg');
  t.equal((await b.req('GET', '/runs/victim?eventCursor=0')).body['run'].status, 'quarantined');
  await b.close();
  await t.rejects(readFile(runPaths(te.dataDir, 'victim').snapshot), { code: 'ENOENT' }, 'no run.json');
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

/**
 * A second data directory under the same integrity key (and tokens and pin) holding a run with the
 * victim's ID and as many events, but other events: its files are genuine for that run ID and
 * key, only not this journal's.
 */
async function twin(te: TestEnv): Promise<TestEnv> {
  const dataDir = join(te.dir, 'data-twin');
  const other: TestEnv = { ...te, dataDir, env: { ...te.env, HARNESS_DATA_DIR: dataDir } };
  const b = await startTestBridge(other);
  t.equal((await b.req('POST', '/runs', { id: 'victim', title: 'seeded' })).status, 201);
  for (let i = 0; i < 3; i++) {
    t.equal(
      (await b.req('POST', '/runs/victim/events', ev({ id: `twin-${i}`, message: 'twin' }))).status,
      201,
    );
  }
  await b.close();
  return other;
}

/** The journal's lines, each with its newline. */
async function journalLines(path: string): Promise<string[]> {
  return (await readFile(path, 'utf8')).split(/(?<=\n)/);
}

t.test('a journal copied from another run is caught by its MACs alone (no snapshot)', async (t) => {
  // Both runs have three records under the same key; with run.json gone only the run ID each
  // record's MAC covers tells the bystander's journal from the victim's.
  const { te } = await seed();
  const victim = runPaths(te.dataDir, 'victim');
  await copyFile(runPaths(te.dataDir, 'bystander').journal, victim.journal);
  await rm(victim.snapshot);
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  await expectQuarantined(t, b, 'events.jsonl');
});

t.test('a record of the same run ID from another journal is caught by the MAC chain', async (t) => {
  // Record 1 of a twin journal (same key, same run ID, same position) carries a valid MAC over
  // its own fields; only its prev, the MAC of a record this journal never had, gives it away.
  const { te } = await seed();
  const other = await twin(te);
  const victim = runPaths(te.dataDir, 'victim');
  const lines = await journalLines(victim.journal);
  const spliced = (await journalLines(runPaths(other.dataDir, 'victim').journal))[1]!;
  t.equal(JSON.parse(spliced).seq, 1);
  t.not(spliced, lines[1], 'a different record');
  lines[1] = spliced;
  await writeFile(victim.journal, lines.join(''));
  await rm(victim.snapshot);
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  await expectQuarantined(t, b, 'events.jsonl');
});

t.test('a record moved to another position under a running bridge is caught by a page read', async (t) => {
  // Record 2 written over record 1 (same run, same length, so every offset still holds): a
  // one-record page at cursor 1 has no record before it to chain to, so only the position the
  // record states (and its MAC covers) tells it is not record 1.
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  for (const run of ['victim', 'bystander']) {
    for (let i = 0; i < 3; i++) {
      t.equal(
        (await b.req('POST', `/runs/${run}/events`, ev({ id: `${run}-${i}`, message: 'msg' }))).status,
        201,
      );
    }
  }
  const path = runPaths(b.t.dataDir, 'victim').journal;
  const lines = await journalLines(path);
  t.equal(lines.length, 3);
  t.equal(Buffer.byteLength(lines[1]!), Buffer.byteLength(lines[2]!), 'records 1 and 2 are the same length');
  const before = (await readFile(path)).length;
  lines[1] = lines[2]!;
  await writeFile(path, lines.join(''));
  t.equal((await readFile(path)).length, before);
  const got = await b.req('GET', '/runs/victim?eventCursor=1&eventLimit=1');
  t.equal(got.status, 200, JSON.stringify(got.body).slice(0, 300));
  t.equal(got.body['run'].status, 'quarantined');
  t.same(got.body['run'].events, [], 'record 2 is never served as record 1');
  await expectQuarantined(t, b, 'events.jsonl');
});

t.test('a record of the same run ID from another journal is caught by a page read', async (t) => {
  // The twin's record 1 has the same length as this journal's (same ids, an equally long message)
  // and a valid MAC over its own fields, so every offset still holds; a page read from record 0
  // must check the prev it states against record 0's MAC, not take it on trust.
  const te = await makeTestEnv();
  const dataDir = join(te.dir, 'data-twin');
  const other: TestEnv = { ...te, dataDir, env: { ...te.env, HARNESS_DATA_DIR: dataDir } };
  const post = async (b: TestBridge, run: string, message: string) => {
    for (let i = 0; i < 3; i++) {
      t.equal((await b.req('POST', `/runs/${run}/events`, ev({ id: `${run}-${i}`, message }))).status, 201);
    }
  };
  const tb = await startTestBridge(other);
  await post(tb, 'victim', 'twin');
  await tb.close();
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  await post(b, 'victim', 'main');
  await post(b, 'bystander', 'msg');
  const path = runPaths(te.dataDir, 'victim').journal;
  const lines = await journalLines(path);
  const spliced = (await journalLines(runPaths(dataDir, 'victim').journal))[1]!;
  t.equal(JSON.parse(spliced).event.message, 'twin');
  t.equal(Buffer.byteLength(spliced), Buffer.byteLength(lines[1]!), 'the two records are the same length');
  lines[1] = spliced;
  await writeFile(path, lines.join(''));
  const got = await b.req('GET', '/runs/victim?eventCursor=0&eventLimit=3');
  t.equal(got.status, 200, JSON.stringify(got.body).slice(0, 300));
  t.equal(got.body['run'].status, 'quarantined');
  t.same(got.body['run'].events, [], "the twin's record is never served");
  await expectQuarantined(t, b, 'events.jsonl');
});

t.test('a tampered complete last record is not cut off as a torn write', async (t) => {
  // The last record keeps its newline, so it is a complete line that fails authentication:
  // tampering, not a crash. With run.json gone, cutting it as torn would go unnoticed.
  const { te } = await seed();
  const victim = runPaths(te.dataDir, 'victim');
  const buf = await readFile(victim.journal);
  const last = buf.lastIndexOf('"message":"msg');
  t.ok(last > buf.lastIndexOf(0x0a, buf.length - 2), 'the flipped byte is in the last record');
  buf[last + '"message":"ms'.length]! ^= 0x01;
  t.equal(buf.at(-1), 0x0a);
  await writeFile(victim.journal, buf);
  await rm(victim.snapshot);
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  await expectQuarantined(t, b, 'events.jsonl');
  t.ok((await readFile(victim.journal)).equals(buf), 'events.jsonl is left byte for byte as found');
});

t.test('a snapshot of the same run ID bound to another journal is not trusted', async (t) => {
  // The twin's run.json is genuine for this key and run ID and has the same event count; only the
  // head MAC it is bound to differs from this journal's.
  const { te } = await seed();
  const other = await twin(te);
  await copyFile(runPaths(other.dataDir, 'victim').snapshot, runPaths(te.dataDir, 'victim').snapshot);
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  await expectQuarantined(t, b, 'run.json is not bound to this journal');
});

t.test("another run's empty snapshot is not trusted", async (t) => {
  // A snapshot of zero records is bound to no journal prefix: only its run ID ties it to its run.
  const { te } = await seed();
  let b = await startTestBridge(te);
  t.equal((await b.req('POST', '/runs', { id: 'spare', title: 'seeded' })).status, 201);
  await b.close();
  // Opening a run without run.json writes one (here of zero records); the close flushes it.
  b = await startTestBridge(te);
  t.equal((await b.req('GET', '/runs/spare')).body['run'].status, 'running');
  await b.close();
  const spare = runPaths(te.dataDir, 'spare').snapshot;
  t.match(JSON.parse(await readFile(spare, 'utf8')), { runId: 'spare', count: 0 });
  await copyFile(spare, runPaths(te.dataDir, 'victim').snapshot);
  b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  await expectQuarantined(t, b, 'run.json belongs to another run');
});

t.test("another run's config swapped in after startup is caught when the run is opened", async (t) => {
  // Startup indexes each directory by the run ID its config names; runs are opened lazily, so a
  // config swapped in after that is checked only by the open itself.
  const { te } = await seed();
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  await copyFile(runPaths(te.dataDir, 'bystander').config, runPaths(te.dataDir, 'victim').config);
  await expectQuarantined(t, b, 'run-config.json belongs to another run');
});
