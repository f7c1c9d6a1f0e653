import { readFile, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { JOURNAL_RECORD_MAX_BYTES } from '../../src/contract/index.js';
import { COMMIT_LOG_FILE } from '../../src/storage/commit-log-replay.js';
import { sealRecord } from '../../src/storage/journal-record.js';
import { SCAN_CHUNK_BYTES } from '../../src/storage/journal-scan.js';
import { LEASE_FILE, runPaths } from '../../src/storage/paths.js';
import {
  cleanup,
  ev,
  makeTestEnv,
  startTestBridge,
  type TestBridge,
  type TestEnv,
} from '../helpers/bridge.js';
import { runVerify } from '../helpers/cli.js';
import { crashImage } from '../helpers/crash-image.js';
import { allEvents, records } from '../helpers/expect.js';
import { recordHandleSyncs } from '../helpers/patch-fs.js';

/**
 * Power loss may leave the part of a journal written behind the commit log and never synced
 * zeroed or out of order, not only cut short. Every record before a run's first logged record was
 * synced before the log was last emptied; from there on the log holds them all. Startup rewrites
 * such a tail from the log (and `harness verify` says the next start will), while damage to the
 * synced records still quarantines the run.
 */
const ids = (prefix: string, from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => `${prefix}${from + i}`);

async function post(t: Test, b: TestBridge, runId: string, eventIds: string[]): Promise<void> {
  for (const id of eventIds) t.equal((await b.req('POST', `/runs/${runId}/events`, ev({ id }))).status, 201);
}

/**
 * A crash image in which run p's records 0-2 were synced (a clean close emptied the log) and
 * records 3-5 are only in commit.log's durable records and p's unsynced journal tail; run q is
 * untouched.
 */
async function imageWithLoggedTail(t: Test): Promise<{ crashed: TestEnv; journal: string; whole: Buffer }> {
  const te = await makeTestEnv();
  const first = await startTestBridge(te);
  await post(t, first, 'p', ids('p', 0, 3));
  await post(t, first, 'q', ids('q', 0, 2));
  await first.close();
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  await post(t, b, 'p', ids('p', 3, 6));
  const crashed = await crashImage(t, b);
  const logged = (await readFile(join(crashed.dataDir, COMMIT_LOG_FILE), 'utf8')).split('\n').filter(Boolean);
  t.same(
    logged.map((l) => /^p \{"seq":(\d+),/.exec(l)?.[1]),
    ['3', '4', '5'],
    'the log holds exactly the records since the clean close',
  );
  const journal = runPaths(crashed.dataDir, 'p').journal;
  return { crashed, journal, whole: await readFile(journal) };
}

/** Byte range of journal record `seq`, its newline included. */
function recordRange(journal: Buffer, seq: number): [number, number] {
  let start = 0;
  for (let i = 0; i < seq; i++) start = journal.indexOf(0x0a, start) + 1;
  return [start, journal.indexOf(0x0a, start) + 1];
}

/** The journal with record `seq` (newline included) zeroed, as out-of-order writeback leaves it. */
function zeroed(journal: Buffer, seq: number): Buffer {
  const copy = Buffer.from(journal);
  const [start, end] = recordRange(journal, seq);
  copy.fill(0, start, end);
  return copy;
}

type Image = Awaited<ReturnType<typeof imageWithLoggedTail>>;

/** A bridge started on the image (closed at teardown), and run p as it then reads. */
async function startOn(t: Test, image: Image) {
  const r = await startTestBridge(image.crashed);
  t.teardown(() => r.close());
  return { r, p: (await r.req('GET', '/runs/p')).body.run };
}

/** Run p's journal damaged as `damaged`, which startup rewrites: the run serves, the journal whole. */
async function expectMended(t: Test, image: Image, damaged: Buffer): Promise<void> {
  await writeFile(image.journal, damaged);
  const { p } = await startOn(t, image);
  t.equal(p.status, 'running');
  t.same(await readFile(image.journal), image.whole);
}

/**
 * Run p's journal damaged as `damaged`, which the log cannot mend: verify calls it tampering with
 * `reason`, startup quarantines the run with it, and the journal is left as found.
 */
async function expectQuarantined(t: Test, image: Image, damaged: Buffer, reason: string) {
  await writeFile(image.journal, damaged);
  const before = await runVerify(image.crashed.env);
  t.equal(before.code, 1);
  t.match(before.stdout, `TAMPERED p: events.jsonl: ${reason}`);
  const started = await startOn(t, image);
  t.equal(started.p.status, 'quarantined');
  t.match(started.p.quarantine.reasons, [`commit.log cannot be replayed: ${reason}`]);
  t.same(await readFile(image.journal), damaged, 'the journal is left as found');
  return started;
}

t.test('a zeroed record in the unsynced tail is rewritten from commit.log at startup', async (t) => {
  const { crashed, journal, whole } = await imageWithLoggedTail(t);
  const damaged = zeroed(whole, 3);
  await writeFile(journal, damaged);

  const before = await runVerify(crashed.env);
  t.equal(before.code, 2, 'verify cannot vouch for the run before the log is replayed');
  t.match(
    before.stdout,
    /UNVERIFIABLE p: events\.jsonl: journal record 3 is not JSON, past the records synced before commit\.log began; the log holds every record from there: start the bridge once/,
  );
  t.notMatch(before.stdout, /TAMPERED/);
  t.match(before.stdout, /^ok q /m);
  t.same(await readFile(journal), damaged, 'verify wrote nothing');

  const seen = await recordHandleSyncs(t);
  const r = await startTestBridge(crashed);
  t.teardown(() => r.close());
  const emptied = seen.indexOf(`truncate ${join(crashed.dataDir, COMMIT_LOG_FILE)}`);
  const synced = seen.indexOf(`datasync ${journal}`);
  t.ok(synced >= 0 && synced < emptied, 'the rewritten journal is synced before the log is emptied');
  const p = (await r.req('GET', '/runs/p')).body.run;
  t.equal(p.status, 'running', 'not quarantined');
  t.same(
    (await allEvents(r, 'p')).map((e) => e.id),
    ids('p', 0, 6),
  );
  t.same(await readFile(journal), whole, 'the journal is byte for byte what was acknowledged');
  await post(t, r, 'p', ['p6']);
  t.same(
    records(await r.journal('p')).map((x) => x.event.id),
    ids('p', 0, 7),
    'appends continue the chain',
  );
  await r.close();
  const after = await runVerify(crashed.env);
  t.equal(after.code, 0, after.stdout);
  t.match(after.stdout, /^ok p \(7 events/m);
});

t.test('a tail cut and followed by a later record is rewritten too', async (t) => {
  const image = await imageWithLoggedTail(t);
  const { whole } = image;
  // Record 4's page never reached the disk and the file was extended past it: 3, then 5.
  const [start4, end4] = recordRange(whole, 4);
  await expectMended(t, image, Buffer.concat([whole.subarray(0, start4 + 20), whole.subarray(end4)]));
});

t.test('a zeroed stretch longer than any record is rewritten too', async (t) => {
  const image = await imageWithLoggedTail(t);
  const { whole } = image;
  // Pages of zeros past record 3's start, then record 5: one "line" longer than any record, and
  // longer than one read of the scan (SCAN_CHUNK_BYTES), so its bytes are not kept while it runs.
  const [start3] = recordRange(whole, 3);
  const [start5] = recordRange(whole, 5);
  const zeros = Buffer.alloc(2 * SCAN_CHUNK_BYTES + JOURNAL_RECORD_MAX_BYTES);
  await expectMended(t, image, Buffer.concat([whole.subarray(0, start3), zeros, whole.subarray(start5)]));
});

t.test('damage to a record synced before the log began still quarantines the run', async (t) => {
  const image = await imageWithLoggedTail(t);
  const { r } = await expectQuarantined(t, image, zeroed(image.whole, 1), 'journal record 1 is not JSON');
  t.equal((await r.req('POST', '/runs/p/events', ev({ id: 'p9' }))).status, 409, 'no writes');
  t.same(await readFile(image.journal), zeroed(image.whole, 1), 'the refused event stored nothing');
  t.equal((await r.req('GET', '/runs/q')).body.run.status, 'running', 'the other run is served');
});

t.test('a log that does not reach back to the damage does not mend it', async (t) => {
  const image = await imageWithLoggedTail(t);
  // Without its record 3 the log claims records 0-3 were synced: record 3 is then damage to them.
  const logPath = join(image.crashed.dataDir, COMMIT_LOG_FILE);
  const lines = (await readFile(logPath, 'utf8')).split('\n').filter(Boolean);
  await writeFile(logPath, `${lines.filter((l) => !l.startsWith('p {"seq":3,')).join('\n')}\n`);
  await expectQuarantined(t, image, zeroed(image.whole, 3), 'journal record 3 is not JSON');
});

t.test('an authentic record the log does not hold, before the damage, is not overwritten', async (t) => {
  const image = await imageWithLoggedTail(t);
  const { crashed, whole } = image;
  // A different record 3, authentic (made with the bridge's key, chained to record 2), then damage:
  // a fork the log cannot settle, not what a power loss leaves.
  const key = Buffer.from(crashed.env['HARNESS_BRIDGE_INTEGRITY_KEY']!, 'utf8');
  const [start3] = recordRange(whole, 3);
  const record2 = records(whole.subarray(0, start3)).at(-1)!;
  const other = sealRecord(key, 'p', 3, record2.mac, { ...record2.event, id: 'fork' }, null, null);
  const forked = Buffer.concat([
    whole.subarray(0, start3),
    Buffer.from(other.line),
    zeroed(whole, 4).subarray(recordRange(whole, 4)[0]),
  ]);
  await expectQuarantined(t, image, forked, 'journal record 4 is not JSON');
});

t.test("a line past the last logged record is not the log's to mend", async (t) => {
  const image = await imageWithLoggedTail(t);
  const junk = Buffer.concat([image.whole, Buffer.from('{"seq":6}\n')]);
  await expectQuarantined(t, image, junk, 'journal record 6 is malformed or out of order');
});

t.test('while a bridge holds the directory, verify calls a damaged journal tampering', async (t) => {
  const { crashed, journal, whole } = await imageWithLoggedTail(t);
  await writeFile(journal, zeroed(whole, 3));
  // A live bridge on this host (this test process's) holds the lease: it has written the
  // journal behind the log, so damage there is not what a power loss leaves, and no start of
  // that bridge is about to rewrite it.
  const lease = JSON.stringify({ pid: process.pid, host: hostname(), startedAt: new Date().toISOString() });
  await writeFile(join(crashed.dataDir, LEASE_FILE), lease);
  const held = await runVerify(crashed.env);
  t.equal(held.code, 1);
  t.match(held.stdout, /TAMPERED p: events\.jsonl: journal record 3 is not JSON/);
});
