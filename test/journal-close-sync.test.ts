import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { CommitLog } from '../src/storage/commit-log.js';
import { JournalWriter } from '../src/storage/journal.js';
import { storedEvent } from './helpers/stored-event.js';

/**
 * A journal is closed (evicted, shut down) only after an fdatasync that follows its last line: a
 * closed journal is forgotten by the commit-log checkpoint, which empties the log once the
 * journals it knows are synced. A sync requested earlier (a snapshot's) may run before the lines
 * of records appended meanwhile reach the file, so it does not count.
 */
const event = storedEvent;

t.test('close syncs the journal even when an earlier sync was requested after the last append', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'harness-close-sync-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const key = randomBytes(32);
  const { commitLog } = await CommitLog.open(dir, key);
  t.teardown(() => commitLog.close());
  const path = join(dir, 'events.jsonl');
  await writeFile(path, '');
  const scan = { count: 0, offsets: [], macs: [], size: 0, truncatedBytes: 0 };
  const journal = await JournalWriter.open(key, 'r', path, scan, commitLog, '0'.repeat(64));

  const syncs: number[] = [];
  const original = fs.fdatasync;
  fs.fdatasync = ((fd: number, cb: (err: NodeJS.ErrnoException | null) => void) => {
    syncs.push(fd);
    original(fd, cb);
  }) as typeof fs.fdatasync;
  syncBuiltinESMExports();
  t.teardown(() => {
    fs.fdatasync = original;
    syncBuiltinESMExports();
  });

  await journal.append(event(1), null).durable;
  const last = journal.append(event(2), null);
  // Requested while record 2's line is still queued for the file (as a snapshot's sync can be).
  const early = journal.syncFile();
  await Promise.all([last.durable, early]);
  const fd = (journal as unknown as { handle: { fd: number } }).handle.fd;
  syncs.length = 0;
  await journal.close();
  t.ok(syncs.includes(fd), 'close ran its own fdatasync of the journal, after every line was written');
});
