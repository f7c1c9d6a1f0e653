import { constants, existsSync } from 'node:fs';
import { type FileHandle, open, readFile, realpath, stat, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { COMMIT_LOG_FILE, DISPUTED_FILE } from '../../src/storage/commit-log-replay.js';
import { LEASE_FILE, runPaths } from '../../src/storage/paths.js';
import {
  cleanup,
  ev,
  makeTestEnv,
  startTestBridge,
  type TestBridge,
  type TestEnv,
} from '../helpers/bridge.js';
import { crashImage } from '../helpers/crash-image.js';
import { allEvents, expectRejected, records, within } from '../helpers/expect.js';
import { patchFs, pathOfFd } from '../helpers/patch-fs.js';

/**
 * The whole body of the answer of a bridge whose storage failed, as of one shutting down: the
 * cause (an EBADF on a data-directory path here) is in the bridge's one line only.
 */
const STOPPING = {
  ok: false,
  error: 'bridge_busy',
  message: 'the bridge is shutting down; retry shortly',
  problems: [],
};

/**
 * An operation on run `held` that keeps a bridge stopping on its own draining, so still answering,
 * until released (it waits for what it admitted, shutdown's grace period at most).
 */
function holdDrain(b: TestBridge): () => void {
  let release = () => {};
  void b.ctx.queue.run('held', () => new Promise<void>((r) => (release = r)));
  return () => release();
}

/**
 * CONTRACT 7 with the bridge-wide commit log: a 2xx means the record is in an fdatasync'd
 * commit.log; a journal that lost acknowledged records (page cache gone in a crash) gets them back
 * at startup, and a log record that does not fit its journal quarantines only that run.
 */

async function started(t: Test, te?: TestEnv): Promise<TestBridge> {
  const b = await startTestBridge(te);
  t.teardown(() => (te ? b.close() : cleanup(b)));
  return b;
}

async function post(t: Test, b: TestBridge, runId: string, ids: string[]): Promise<void> {
  for (const id of ids) {
    const r = await b.req('POST', `/runs/${runId}/events`, ev({ id }));
    t.equal(r.status, 201, `${runId}/${id} acknowledged`);
  }
}

const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

/** Byte offset just past journal record `keep` (the first `keep` records survive). */
async function cutAfter(path: string, keep: number): Promise<void> {
  const buf = await readFile(path);
  let at = 0;
  for (let i = 0; i < keep; i++) at = buf.indexOf(0x0a, at) + 1;
  await truncate(path, at);
}

/**
 * Records, in order, every fdatasync and ftruncate (the callback forms the commit path uses) with
 * the path of the descriptor at the time of the call; restored at the end of the test.
 */
function spyOnSyncs(t: Test): { op: 'sync' | 'truncate'; path: string }[] {
  const ops: { op: 'sync' | 'truncate'; path: string }[] = [];
  const recorded =
    (op: 'sync' | 'truncate') =>
    (original: (...args: unknown[]) => unknown) =>
    (fd: unknown, ...rest: unknown[]) => {
      ops.push({ op, path: pathOfFd(fd as number) });
      return original(fd, ...rest);
    };
  patchFs(t, { fdatasync: recorded('sync'), ftruncate: recorded('truncate') });
  return ops;
}

t.test('acknowledged records a journal lost come back from commit.log at startup', async (t) => {
  const b = await started(t);
  await post(t, b, 'a', ids('a', 6));
  await post(t, b, 'b', ids('b', 3));
  const crashed = await crashImage(t, b);
  const log = await readFile(join(crashed.dataDir, COMMIT_LOG_FILE), 'utf8');
  t.equal(log.split('\n').filter(Boolean).length, 9, 'every acknowledged record is in the log');

  // The page cache is gone: run a keeps 2 records and a torn half of its third; b keeps none.
  const a = runPaths(crashed.dataDir, 'a').journal;
  const before = await readFile(a);
  await cutAfter(a, 2);
  const third = before.subarray((await readFile(a)).length);
  await writeFile(a, third.subarray(0, 40), { flag: 'a' });
  await truncate(runPaths(crashed.dataDir, 'b').journal, 0);

  const r = await started(t, crashed);
  t.same(
    (await allEvents(r, 'a')).map((e) => e.id),
    ids('a', 6),
  );
  t.same(
    (await allEvents(r, 'b')).map((e) => e.id),
    ids('b', 3),
  );
  t.same(await r.journal('a'), before, 'the journal is byte for byte what was acknowledged');
  t.equal((await stat(join(crashed.dataDir, COMMIT_LOG_FILE))).size, 0, 'the replayed log is emptied');
  await post(t, r, 'a', ['a6']);
  t.same(
    records(await r.journal('a')).map((x) => x.event.id),
    ids('a', 7),
    'appends continue the chain',
  );
});

t.test(
  'a commit.log record that fails authentication quarantines only its run, on every start',
  async (t) => {
    const b = await started(t);
    await post(t, b, 'good', ids('g', 2));
    await post(t, b, 'bad', ids('x', 3));
    const crashed = await crashImage(t, b);
    await cutAfter(runPaths(crashed.dataDir, 'bad').journal, 1);
    const logPath = join(crashed.dataDir, COMMIT_LOG_FILE);
    const log = await readFile(logPath, 'utf8');
    // Edit the message of record 2 of run "bad" (not in its journal any more).
    const lines = log.split('\n');
    const at = lines.findIndex((l) => l.startsWith('bad ') && l.includes('"seq":2'));
    t.ok(at >= 0);
    lines[at] = lines[at]!.replace('"message":"m"', '"message":"M"');
    await writeFile(logPath, lines.join('\n'));

    for (const round of [1, 2]) {
      const r = await started(t, crashed);
      const bad = await r.req('GET', '/runs/bad');
      t.equal(bad.body.run?.status, 'quarantined', `round ${round}: quarantined`);
      t.match(JSON.stringify(bad.body), /commit\.log record 2 fails authentication/);
      await expectRejected(
        t,
        r,
        'bad',
        () => r.req('POST', '/runs/bad/events', ev({ id: 'x9' })),
        409,
        'run_quarantined',
      );
      t.same(
        (await allEvents(r, 'good')).map((e) => e.id),
        ids('g', 2),
        'the other run is served',
      );
      await r.close();
    }
    const disputed = await readFile(join(crashed.dataDir, DISPUTED_FILE), 'utf8');
    t.match(disputed, /"runId":"bad"/, 'the records are kept for inspection');
  },
);

t.test('a commit.log record that differs from the journal at its position is disputed', async (t) => {
  const b = await started(t);
  await post(t, b, 'r', ids('e', 2));
  const crashed = await crashImage(t, b);
  const logPath = join(crashed.dataDir, COMMIT_LOG_FILE);
  const log = await readFile(logPath, 'utf8');
  const line = log.split('\n')[1]!;
  const mac = /"mac":"([0-9a-f]{64})"/.exec(line)![1]!;
  await writeFile(logPath, log.replace(mac, 'f'.repeat(64)));
  const r = await started(t, crashed);
  const got = await r.req('GET', '/runs/r');
  t.equal(got.body.run?.status, 'quarantined');
  t.match(JSON.stringify(got.body), /commit\.log record 1 differs from the journal/);
});

t.test('a commit.log record for a run without a journal quarantines that run ID for good', async (t) => {
  const b = await started(t);
  await post(t, b, 'r', ids('e', 2));
  const crashed = await crashImage(t, b);
  const logPath = join(crashed.dataDir, COMMIT_LOG_FILE);
  const line = (await readFile(logPath, 'utf8')).split('\n')[0]!;
  await writeFile(logPath, `${await readFile(logPath, 'utf8')}ghost${line.slice(1)}\n`);
  for (let start = 0; start < 2; start++) {
    const r = await started(t, crashed);
    const got = await r.req('GET', '/runs/ghost');
    t.equal(
      got.body.run?.status,
      'quarantined',
      `start ${start + 1}: ${JSON.stringify(got.body).slice(0, 200)}`,
    );
    t.match(got.body.run.quarantine.reasons, [/commit\.log names a run without a journal/]);
    const w = await r.req('POST', '/runs/ghost/events', ev());
    t.equal(w.status, 409, 'no event is acknowledged that a later start would hide');
    t.equal(w.body.error, 'run_quarantined');
    t.notOk(
      existsSync(runPaths(crashed.dataDir, 'ghost').dir),
      'nothing stored: no run directory, no journal',
    );
    t.equal((await r.req('GET', '/runs/r')).body.run?.eventCount, 2, 'the other run is served');
    await r.close();
  }
});

t.test('a commit.log record without a valid run ID indexes no run', async (t) => {
  const b = await started(t);
  await post(t, b, 'r', ids('e', 2));
  const crashed = await crashImage(t, b);
  const logPath = join(crashed.dataDir, COMMIT_LOG_FILE);
  const log = await readFile(logPath, 'utf8');
  await writeFile(logPath, `${log}../r${log.split('\n')[0]!.slice(1)}\n`);
  const r = await started(t, crashed);
  const runs = (await r.req('GET', '/runs')).body.runs.map((run: { id: string }) => run.id);
  t.same(runs, ['r'], 'only the run with a journal is listed');
  t.equal((await r.req('GET', '/runs/r')).body.run?.eventCount, 2, 'and served');
});

t.test('a gap between the journal and commit.log is disputed, a torn last log line ignored', async (t) => {
  const b = await started(t);
  await post(t, b, 'r', ids('e', 4));
  await post(t, b, 's', ids('s', 2));
  const crashed = await crashImage(t, b);
  const logPath = join(crashed.dataDir, COMMIT_LOG_FILE);
  const lines = (await readFile(logPath, 'utf8')).split('\n').filter(Boolean);
  await cutAfter(runPaths(crashed.dataDir, 'r').journal, 1);
  const withoutR1 = lines.filter((l) => !(l.startsWith('r ') && l.includes('"seq":1,')));
  const torn = withoutR1.at(-1)!.slice(0, 30);
  await writeFile(logPath, `${withoutR1.slice(0, -1).join('\n')}\n${torn}`);
  const r = await started(t, crashed);
  t.match(
    JSON.stringify((await r.req('GET', '/runs/r')).body),
    /commit\.log skips from journal record 1 to 2/,
  );
  t.equal((await r.req('GET', '/runs/s')).body.run?.status, 'running', 'a torn last log line is ignored');
  t.same(
    (await allEvents(r, 's')).map((e) => e.id),
    ['s0', 's1'],
  );
});

t.test('the log is checkpointed past its size bound and emptied on close', async (t) => {
  const te = await makeTestEnv();
  const b = await startTestBridge(te, { storage: { checkpointBytes: 8192 } });
  t.teardown(() => cleanup(b));
  const logPath = join(te.dataDir, COMMIT_LOG_FILE);
  // A checkpoint empties the log only after the journals it held records of are synced on their
  // own: every truncation of commit.log follows an fdatasync of the run's journal since the last.
  const ops = spyOnSyncs(t);
  let maxSize = 0;
  for (let i = 0; i < 100; i++) {
    t.equal((await b.req('POST', '/runs/ck/events', ev({ id: `c${i}` }))).status, 201);
    maxSize = Math.max(maxSize, (await stat(logPath)).size);
  }
  t.ok(maxSize < 8192 + 2048, `the log stays near its bound (max ${maxSize} bytes)`);
  t.ok(maxSize > 4096, 'and is used');
  const logFile = await realpath(logPath);
  const journalFile = await realpath(runPaths(te.dataDir, 'ck').journal);
  const truncations = ops.filter((o) => o.op === 'truncate' && o.path === logFile).length;
  t.ok(truncations >= 3, `the log was checkpointed while events came in (${truncations} times)`);
  let synced = false;
  let unsyncedTruncations = 0;
  for (const o of ops) {
    if (o.op === 'sync' && o.path === journalFile) synced = true;
    if (o.op === 'truncate' && o.path === logFile) {
      if (!synced) unsyncedTruncations++;
      synced = false;
    }
  }
  t.equal(unsyncedTruncations, 0, 'no checkpoint emptied the log before syncing the journal');
  t.equal(records(await b.journal('ck')).length, 100);
  await b.close();
  t.equal((await stat(logPath)).size, 0, 'a clean close leaves an empty log');
});

t.test(
  'a failed journal write stops the bridge; the acknowledged record, durable in the log, comes back at restart',
  async (t) => {
    const b = await startTestBridge();
    t.teardown(() => b.close());
    await post(t, b, 'j', ['e0']);
    const release = holdDrain(b);
    // The log write succeeds, then the run's own journal write fails (a read-only descriptor).
    const loaded = await b.ctx.store.load('j');
    if (loaded.kind !== 'open') throw new Error('the run is not open');
    const journal = loaded.run.journal as unknown as { handle: FileHandle };
    const real = journal.handle;
    journal.handle = await open(runPaths(b.t.dataDir, 'j').journal, 'r');
    t.teardown(() => real.close());
    b.ctx.store.release(loaded.run);
    const before = await b.journal('j');
    // e1 is acknowledged once the log holds it durably; its journal line is written after.
    t.equal((await b.req('POST', '/runs/j/events', ev({ id: 'e1' }))).status, 201, 'durable in the log');
    const failed = await b.req('POST', '/runs/j/events', ev({ id: 'e2' }));
    t.equal(failed.status, 503, 'the failed journal write stops the bridge: it admits nothing more');
    t.same(failed.body, STOPPING, 'the answer names no cause, path or stack');
    t.equal((await b.req('GET', '/runs/j')).status, 503, 'nor reads');
    release();
    const stop = await within(5000, b.stopped);
    t.equal(stop.cause, 'storage');
    t.match(stop.message, /^storage failed: writing \S+\/events\.jsonl: EBADF: bad file descriptor, write$/);
    t.notOk(existsSync(join(b.t.dataDir, LEASE_FILE)), 'the lease is released');
    t.ok((await b.journal('j')).equals(before), 'journal bytes unchanged');

    const r = await startTestBridge(b.t);
    t.teardown(() => cleanup(r));
    t.same(
      (await allEvents(r, 'j')).map((e) => e.id),
      ['e0', 'e1'],
      'the log restores the acknowledged record; e2 was never written',
    );
    const retry = await r.req('POST', '/runs/j/events', ev({ id: 'e1' }));
    t.equal(retry.status, 200, "the client's retry finds it");
    t.equal(retry.body['duplicate'], true);
  },
);

t.test('the log is opened O_DSYNC: its one write per batch returns only once it is on disk', async (t) => {
  const b = await started(t);
  await post(t, b, 'd', ['e0']);
  const { fd } = (b.ctx.store as unknown as { commitLog: { handle: FileHandle } }).commitLog.handle;
  // The kernel's view of the open descriptor: its status flags, in octal.
  const fdinfo = await readFile(`/proc/self/fdinfo/${fd}`, 'utf8');
  const flags = Number.parseInt(/^flags:\s+([0-7]+)$/m.exec(fdinfo)?.[1] ?? '0', 8);
  t.ok(flags & constants.O_DSYNC, 'every write is durable when it returns (no separate fdatasync)');
  t.ok(flags & constants.O_APPEND, 'and appends');
});

t.test('a failed commit-log write refuses its batch and stops the bridge', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => b.close());
  await post(t, b, 'r', ['e0']);
  const before = await b.journal('r');
  const release = holdDrain(b);
  // Swap the log's descriptor for a read-only one under the running bridge: writes fail as on a
  // failing disk.
  const log = (b.ctx.store as unknown as { commitLog: { handle: FileHandle } }).commitLog;
  const real = log.handle;
  const readOnly = await open(join(b.t.dataDir, COMMIT_LOG_FILE), 'r');
  log.handle = readOnly;
  t.teardown(() => real.close());
  t.same((await b.req('GET', '/health')).body['storage'], { ok: true });
  const failed = await b.req('POST', '/runs/r/events', ev({ id: 'e1' }));
  t.equal(failed.status, 503, 'its record is not durable: refused, as at shutdown');
  t.same(failed.body, STOPPING, 'the answer names no cause, path or stack');
  t.equal((failed.headers as Headers).get('retry-after'), '1');
  t.equal((await b.req('POST', '/runs/r/events', ev({ id: 'e2' }))).status, 503, 'nothing more is admitted');
  t.equal((await b.req('GET', '/runs/r')).status, 503, 'nor reads');
  t.equal((await b.req('GET', '/health')).status, 503, 'nor the health probe');
  release();
  const stop = await within(5000, b.stopped);
  t.equal(stop.cause, 'storage');
  t.match(stop.message, /^storage failed: writing \S+\/commit\.log: EBADF: bad file descriptor, write$/);
  t.notOk(existsSync(join(b.t.dataDir, LEASE_FILE)), 'the lease is released');
  await t.rejects(fetch(`${b.url}/health`), 'the port no longer answers');
  t.ok((await b.journal('r')).equals(before), 'acknowledged records stay, and nothing else was added');

  const r = await startTestBridge(b.t);
  t.teardown(() => cleanup(r));
  t.same(
    (await allEvents(r, 'r')).map((e) => e.id),
    ['e0'],
    'the restart serves the acknowledged record, not the refused one',
  );
});
