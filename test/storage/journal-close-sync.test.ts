import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { CommitLog } from '../../src/storage/commit-log.js';
import { COMMIT_LOG_FILE } from '../../src/storage/commit-log-replay.js';
import { JournalWriter } from '../../src/storage/journal.js';
import { patchFs } from '../helpers/patch-fs.js';
import { journalFd, storedEvent } from '../helpers/stored-event.js';

/**
 * A journal is closed (evicted, shut down) only after an fdatasync that follows its last line: a
 * closed journal is forgotten by the commit-log checkpoint, which empties the log once the
 * journals it knows are synced. A sync requested earlier (a snapshot's) may run before the lines
 * of records appended meanwhile reach the file, so it does not count.
 */
const event = storedEvent;

/** A commit log in a fresh directory and an empty journal on it. */
async function opened(t: Test) {
  const dir = await mkdtemp(join(tmpdir(), 'harness-close-sync-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const key = randomBytes(32);
  const { commitLog } = await CommitLog.open(dir, key);
  const path = join(dir, 'events.jsonl');
  await writeFile(path, '');
  const scan = { count: 0, offsets: [], macs: [], size: 0, truncatedBytes: 0 };
  const journal = await JournalWriter.open(key, 'r', path, scan, commitLog, '0'.repeat(64));
  return { commitLog, journal, log: () => readFile(join(dir, COMMIT_LOG_FILE)) };
}

t.test('close syncs the journal even when an earlier sync was requested after the last append', async (t) => {
  const { commitLog, journal } = await opened(t);
  t.teardown(() => commitLog.close());

  const syncs: number[] = [];
  patchFs(t, {
    fdatasync:
      (original) =>
      (fd, ...rest) => {
        syncs.push(fd as number);
        return original(fd, ...rest);
      },
  });

  await journal.append(event(1), null).durable;
  const last = journal.append(event(2), null);
  // Requested while record 2's line is still queued for the file (as a snapshot's sync can be).
  const early = journal.syncFile();
  await Promise.all([last.durable, early]);
  const fd = journalFd(journal);
  syncs.length = 0;
  await journal.close();
  t.ok(syncs.includes(fd), 'close ran its own fdatasync of the journal, after every line was written');
});

t.test('a journal whose closing sync failed keeps the commit log from being emptied', async (t) => {
  const { commitLog, journal, log } = await opened(t);
  await journal.append(event(1), null).durable;
  const fd = journalFd(journal);
  patchFs(t, {
    fdatasync:
      (original) =>
      (target, ...rest) => {
        if (target !== fd) return original(target, ...rest);
        return (rest.at(-1) as (err: Error) => void)(
          Object.assign(new Error('EIO: i/o error'), { code: 'EIO' }),
        );
      },
  });
  const held = await log();
  t.ok(held.length > 0, 'the log holds the record');
  await journal.close();
  // The log is the record's only durable copy: the checkpoint at shutdown must fail, not empty it.
  await t.rejects(commitLog.close(), { code: 'EIO' });
  t.same(await log(), held, 'the log still holds the record');
});
