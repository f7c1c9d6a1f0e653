import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { JOURNAL_WRITE_BEHIND_BYTES } from '../src/contract/index.js';
import { CommitLog } from '../src/storage/commit-log.js';
import { COMMIT_LOG_FILE } from '../src/storage/commit-log-replay.js';
import { JournalWriter } from '../src/storage/journal.js';
import { cleanup, ev, makeTestEnv, startTestBridge } from './helpers/bridge.js';
import { crashImage } from './helpers/crash-image.js';
import { records } from './helpers/expect.js';
import { patchFs } from './helpers/patch-fs.js';
import { journalFd, storedEvent } from './helpers/stored-event.js';

/**
 * A record is acknowledged once the commit log holds it durably; its line reaches the run's
 * events.jsonl later. While batches follow each other a journal's lines wait, up to
 * JOURNAL_WRITE_BEHIND_BYTES, and are written when the log has no further batch, or before the
 * journal is read, synced or closed.
 */
const event = storedEvent;

const scan = () => ({ count: 0, offsets: [], macs: [], size: 0, truncatedBytes: 0 });

/**
 * A commit log whose writes take 20 ms (so the next batch gathers while one is out), two
 * journals on it, the number of file writes made to each journal's descriptor, and the
 * descriptors whose writes fail (EIO).
 */
async function setup(t: Test) {
  const dir = await mkdtemp(join(tmpdir(), 'harness-write-behind-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const key = randomBytes(32);
  const { commitLog } = await CommitLog.open(dir, key);
  const open = async (name: string) => {
    const path = join(dir, `${name}.jsonl`);
    await writeFile(path, '');
    const journal = await JournalWriter.open(key, name, path, scan(), commitLog, '0'.repeat(64));
    return { journal, path, fd: journalFd(journal) };
  };
  const x = await open('x');
  const y = await open('y');
  const writes = new Map<number, number>();
  const failing = new Set<number>();
  const log = { writes: 0 };
  t.teardown(async () => {
    await x.journal.close();
    await y.journal.close();
    await commitLog.close();
  });
  patchFs(t, {
    write:
      (original) =>
      (...args) => {
        log.writes++;
        setTimeout(() => original(...args), 20);
      },
    writeSync:
      (original) =>
      (fd, ...rest) => {
        writes.set(fd as number, (writes.get(fd as number) ?? 0) + 1);
        if (failing.has(fd as number)) throw Object.assign(new Error('EIO: i/o error'), { code: 'EIO' });
        return original(fd, ...rest);
      },
  });
  return { x, y, writes, failing, log, commitLog, logFile: join(dir, COMMIT_LOG_FILE) };
}

const lines = async (path: string) => (await readFile(path, 'utf8')).split('\n').filter(Boolean).length;

/** Appends to `y` every 5 ms (faster than a log write) until the returned stop is called. */
function keepBusy(y: { journal: JournalWriter }): () => Promise<void> {
  let busy = true;
  const done = (async () => {
    for (let n = 0; busy; n++) {
      y.journal.append(event(n), null);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await y.journal.idle();
  })();
  return () => {
    busy = false;
    return done;
  };
}

t.test('back-to-back batches hold a journal back until the log has no further batch', async (t) => {
  const { x, writes, log } = await setup(t);
  const durable: Promise<void>[] = [];
  // A record every 10 ms against 20 ms log writes: each batch is gathered while one is out.
  for (let n = 0; n < 10; n++) {
    durable.push(x.journal.append(event(n), null).durable);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await Promise.all(durable);
  t.ok(log.writes >= 4, `several batches (${log.writes})`);
  t.equal(await lines(x.path), 10, 'every acknowledged line is in the file once the log is idle');
  t.ok((writes.get(x.fd) ?? 0) <= log.writes / 2, `in fewer writes than batches (${writes.get(x.fd)})`);
});

t.test('a journal past JOURNAL_WRITE_BEHIND_BYTES is written while the log stays busy', async (t) => {
  const { x, y } = await setup(t);
  const stop = keepBusy(y);
  const big = 'm'.repeat(12 * 1024);
  const count = Math.ceil(JOURNAL_WRITE_BEHIND_BYTES / big.length) + 2;
  for (let n = 0; n < count; n++) await x.journal.append(event(n, big), null).durable;
  const written = await lines(x.path);
  t.ok(written >= count - 2, `the lines past the bound are written (${written} of ${count})`);
  await stop();
  t.equal(await lines(x.path), count, 'the rest once the log is idle');
});

t.test('a read writes its journal first while the log is kept busy by another run', async (t) => {
  const { x, y } = await setup(t);
  const stop = keepBusy(y);
  await x.journal.append(event(0), null).durable;
  t.equal(await lines(x.path), 0, "x's line waits while batches follow each other");
  const [entry] = await x.journal.read(0, 1);
  t.equal(entry?.event.id, 'e0', 'the read finds the acknowledged record');
  t.equal(await lines(x.path), 1);
  await stop();
});

t.test('a held line the journal file refuses fails the log: nothing more is acknowledged', async (t) => {
  const { x, y, failing, commitLog, logFile } = await setup(t);
  const stop = keepBusy(y);
  await x.journal.append(event(0), null).durable;
  t.equal(await lines(x.path), 0, "x's line is held");
  failing.add(x.fd);
  await t.rejects(x.journal.read(0, 1), { code: 'EIO' });
  // The file is behind what was acknowledged: only a restart, replaying the log, mends it.
  t.match(x.journal.broken, { code: 'EIO' }, 'the log has failed');
  t.throws(() => x.journal.append(event(1), null), { code: 'EIO' }, 'and refuses appends');
  failing.clear();
  await stop().catch(() => {});
  // Nor is the log emptied at shutdown: it holds the only durable copy of the record.
  await commitLog.close();
  t.match(await readFile(logFile, 'utf8'), /^x \{"seq":0,/m, 'the log keeps the record');
});

t.test('a sync writes its journal first', async (t) => {
  const { x, y } = await setup(t);
  const stop = keepBusy(y);
  await x.journal.append(event(0), null).durable;
  t.equal(await lines(x.path), 0);
  await x.journal.syncFile();
  t.equal(await lines(x.path), 1, 'the line is in the file before its fdatasync');
  await stop();
});

t.test('a run dropped from the open-run cache has its lines written before it can be reopened', async (t) => {
  // An open-run cache of one. Run c is posted to without pause, so the log always has a further
  // batch and lines are held back; a and b, posted to in turn, are evicted and reopened each time.
  const b = await startTestBridge(await makeTestEnv(), { storage: { cacheSize: 1 } });
  t.teardown(() => cleanup(b));
  let busy = true;
  let c = 0;
  const background = Array.from({ length: 8 }, async () => {
    while (busy) await b.req('POST', '/runs/c/events', ev({ id: `c${c++}` }));
  });
  const n = 40;
  const statuses = new Set<number>();
  for (let i = 0; i < 2 * n; i++)
    statuses.add(
      (await b.req('POST', `/runs/${i % 2 === 0 ? 'a' : 'b'}/events`, ev({ id: `e${i}` }))).status,
    );
  busy = false;
  await Promise.all(background);
  t.same([...statuses], [201], 'every event acknowledged');
  for (const runId of ['a', 'b']) {
    const run = (await b.req('GET', `/runs/${runId}`)).body.run;
    t.equal(run.status, 'running', `${runId} is intact`);
    t.equal(run.eventCount, n);
    t.equal(records(await b.journal(runId)).length, n, `${runId}'s journal holds each record once`);
  }
  const restarted = await startTestBridge(await crashImage(t, b));
  t.teardown(() => restarted.close());
  for (const runId of ['a', 'b', 'c'])
    t.equal(
      (await restarted.req('GET', `/runs/${runId}`)).body.run.status,
      'running',
      `${runId} reopens intact`,
    );
});
