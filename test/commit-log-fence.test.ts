import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { CommitLog, type LoggedJournal } from '../src/storage/commit-log.js';
import { COMMIT_LOG_FILE } from '../src/storage/commit-log-replay.js';
import { JournalWriter } from '../src/storage/journal.js';
import { LeaseLostError } from '../src/storage/lease.js';
import { GENESIS } from '../src/storage/mac.js';
import { storedEvent } from './helpers/stored-event.js';

/**
 * The commit log's fence (the bridge passes `Lease.fence`): once the data directory's lease is
 * another bridge's, this log writes nothing more, neither a batch, nor a journal's held lines,
 * nor the emptying of the log at a checkpoint, however far each has got.
 */

/** A fence that passes `passes` times, then throws for good, as a lost lease does. */
function fenceAfter(passes: number): { fence: () => void; calls: () => number } {
  let calls = 0;
  return {
    fence: () => {
      if (calls++ >= passes) throw new LeaseLostError('lost');
    },
    calls: () => calls,
  };
}

/** A journal that records the lines written to its file; `holdUpTo` lines are held back. */
function journal(holdUpTo: number): LoggedJournal & { written: Buffer[] } {
  let held: Buffer[] = [];
  return {
    logPrefix: Buffer.from('r '),
    file: 'r/events.jsonl',
    written: [],
    holdLines(lines) {
      held.push(...lines);
      return held.length > holdUpTo;
    },
    writeHeldLines() {
      this.written.push(...held);
      held = [];
    },
    syncFile: async () => {},
  };
}

async function open(t: Test, fence: () => void) {
  const dir = await mkdtemp(join(tmpdir(), 'harness-fence-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const { commitLog } = await CommitLog.open(dir, randomBytes(32), { fence });
  return { commitLog, dir, log: () => readFile(join(dir, COMMIT_LOG_FILE)) };
}

t.test('a batch is not written once the fence throws', async (t) => {
  const f = fenceAfter(0);
  const { commitLog, log } = await open(t, f.fence);
  const j = journal(0);
  await t.rejects(commitLog.append(j, Buffer.from('{"seq":0}\n')), LeaseLostError);
  t.equal((await log()).length, 0, 'nothing reached the log');
  t.same(j.written, [], 'nor the journal');
  t.throws(() => commitLog.append(j, Buffer.from('{"seq":1}\n')), LeaseLostError, 'later appends refused');
  await commitLog.close();
});

t.test('lines held back when the fence closes are never written', async (t) => {
  for (const [how, holdUpTo] of [
    ['after the last batch', 10],
    ['past the write-behind size', 0],
  ] as const) {
    // The batch's write passes the fence; the journal write behind it does not.
    const f = fenceAfter(1);
    const { commitLog, log } = await open(t, f.fence);
    const j = journal(holdUpTo);
    await commitLog.append(j, Buffer.from('{"seq":0}\n'));
    await commitLog.idle();
    t.equal((await log()).toString(), 'r {"seq":0}\n', `${how}: the batch is durable`);
    t.same(j.written, [], `${how}: its line is not written to the journal`);
    t.ok(f.calls() >= 2, `${how}: the journal write asked the fence`);
    t.type(commitLog.broken, LeaseLostError, `${how}: the log has failed`);
    t.throws(() => commitLog.writeHeld(j), LeaseLostError, `${how}: a later write of the journal is refused`);
    t.same(j.written, [], `${how}: and writes nothing`);
    await commitLog.close();
  }
});

t.test('a read after a batch failed reports that failure, never a forged record', async (t) => {
  // Record 0 and its journal line pass the fence; record 1's batch does not. The writer counts
  // record 1 (sealed before its batch failed), the file never got it: read as it stands, the
  // journal would look tampered with and the run be quarantined for a write failure.
  const f = fenceAfter(2);
  const { commitLog, dir } = await open(t, f.fence);
  const path = join(dir, 'events.jsonl');
  await writeFile(path, '');
  const scan = { count: 0, offsets: [], macs: [], size: 0, truncatedBytes: 0 };
  const j = await JournalWriter.open(randomBytes(32), 'r', path, scan, commitLog, GENESIS);
  await j.append(storedEvent(0), null).durable;
  await t.rejects(j.append(storedEvent(1), null).durable, LeaseLostError);
  await t.rejects(j.read(0, 2), LeaseLostError, 'the read reports the failed log');
  await j.close();
  await commitLog.close();
});

t.test('a checkpoint does not empty the log once the fence throws', async (t) => {
  const f = fenceAfter(2);
  const { commitLog, log } = await open(t, f.fence);
  const j = journal(10);
  await commitLog.append(j, Buffer.from('{"seq":0}\n'));
  await commitLog.idle();
  t.same(j.written.map(String), ['{"seq":0}\n'], 'written behind the log while the lease held');
  const before = await log();
  t.ok(before.length > 0);
  // The lease is lost now; closing checkpoints the log, whose emptying must ask the fence first.
  await commitLog.close();
  t.same(await log(), before, 'the log is left as it is');
});

t.test('a batch write that fails partway is cut back: no record of it stays in the log', async (t) => {
  // The write lands the first half of the batch (whole records among it), then fails, as a full
  // disk or a file-size limit does. None of the batch was acknowledged, so none may stay.
  const fdIo = await import('../src/storage/fd-io.js');
  const fs = await import('node:fs');
  let failNext = false;
  const { CommitLog: Log } = await t.mockImport<typeof import('../src/storage/commit-log.js')>(
    new URL('../src/storage/commit-log.js', import.meta.url).href,
    {
      [new URL('../src/storage/fd-io.js', import.meta.url).href]: {
        ...fdIo,
        writeAll: async (fd: number, data: Buffer) => {
          if (!failNext) return fdIo.writeAll(fd, data);
          fs.writeSync(fd, data, 0, Math.floor(data.length / 2));
          throw Object.assign(new Error('EFBIG: file too large, write'), { code: 'EFBIG' });
        },
      },
    },
  );
  const dir = await mkdtemp(join(tmpdir(), 'harness-cutback-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const { commitLog } = await Log.open(dir, randomBytes(32));
  const log = () => readFile(join(dir, COMMIT_LOG_FILE));
  const j = journal(100);
  await commitLog.append(j, Buffer.from('{"seq":0}\n'));
  const acknowledged = await log();
  failNext = true;
  const batch = ['{"seq":1}\n', '{"seq":2}\n', '{"seq":3}\n', '{"seq":4}\n'].map((l) =>
    commitLog.append(j, Buffer.from(l)),
  );
  for (const appended of batch) await t.rejects(appended, /EFBIG/);
  t.ok((await log()).equals(acknowledged), 'the log holds exactly the acknowledged batch');
  t.ok(commitLog.broken, 'the log is failed until a restart');
  await commitLog.close().catch(() => {});
});
