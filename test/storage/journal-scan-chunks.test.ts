import { randomBytes } from 'node:crypto';
import { appendFile, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { JournalEntry, StoredEvent } from '../../src/contract/index.js';
import { JOURNAL_RECORD_MAX_BYTES } from '../../src/contract/index.js';
import { JournalAuthError, sealRecord } from '../../src/storage/journal-record.js';
import { SCAN_CHUNK_BYTES, scanJournal } from '../../src/storage/journal-scan.js';
import { GENESIS } from '../../src/storage/mac.js';
import { recordHandleSyncs } from '../helpers/patch-fs.js';

/**
 * SPEC Limits and CONTRACT 7: a journal is read back in bounded chunks, never whole (a journal
 * past 2 GiB cannot be read at once, and would otherwise quarantine a legitimate run on reopen).
 * Records that span chunks, a torn tail that spans chunks, and a forged or oversized line inside a
 * later chunk are handled exactly as a whole-file read would handle them.
 */
const key = randomBytes(32);
const runId = 'chunked-run';
const dir = await mkdtemp(join(tmpdir(), 'harness-scan-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

/** `n` sealed records of varying sizes; their lines, offsets and MACs. */
function journal(n: number) {
  const lines: string[] = [];
  const offsets: number[] = [];
  const macs: string[] = [];
  let prev = GENESIS;
  let size = 0;
  for (let seq = 0; seq < n; seq++) {
    const event = {
      id: `e-${seq}`,
      ts: '2026-01-01T00:00:00.000Z',
      type: 'gate.fired',
      actor: 'runtime-a',
      runMode: 'live',
      eventSource: 'api',
      nodeId: 'implement',
      message: `gate ${seq} ${'x'.repeat((seq * 37) % 300)}`,
      status: 'ok',
    } as StoredEvent;
    const sealed = sealRecord(key, runId, seq, prev, event, null, null);
    lines.push(sealed.line);
    offsets.push(size);
    macs.push(sealed.mac);
    size += Buffer.byteLength(sealed.line);
    prev = sealed.mac;
  }
  return { text: lines.join(''), lines, offsets, macs, size };
}

const J = journal(40);
let fileNo = 0;
async function file(text: string): Promise<string> {
  const path = join(dir, `events-${fileNo++}.jsonl`);
  await writeFile(path, text);
  return path;
}

t.test('records spanning chunks of any size are read exactly', async (t) => {
  const path = await file(J.text);
  for (const chunkBytes of [1, 7, 64, 333, 4096, SCAN_CHUNK_BYTES]) {
    const seen: JournalEntry[] = [];
    const scan = await scanJournal(key, runId, path, { chunkBytes, onEntry: (e) => seen.push(e) });
    t.equal(scan.count, J.lines.length, `chunk ${chunkBytes}: every record`);
    t.same(scan.offsets, J.offsets, `chunk ${chunkBytes}: offsets`);
    t.same(scan.macs, J.macs, `chunk ${chunkBytes}: MACs`);
    t.equal(scan.size, J.size);
    t.equal(scan.truncatedBytes, 0);
    t.same(
      seen.map((e) => [e.seq, e.event.id]),
      J.lines.map((_, i) => [i, `e-${i}`]),
      `chunk ${chunkBytes}: entries in order`,
    );
  }
  t.equal(await readFile(path, 'utf8'), J.text, 'an intact journal is not touched');
});

t.test('a torn tail across a chunk boundary is cut (or only reported, read-only)', async (t) => {
  const whole = journal(41);
  const last = whole.lines.at(-1)!;
  const torn = last.slice(0, Math.floor(last.length / 2) + 5);
  for (const chunkBytes of [16, 100, 257]) {
    const path = await file(J.text + torn);
    const ro = await scanJournal(key, runId, path, { chunkBytes, readOnly: true });
    t.equal(ro.count, J.lines.length);
    t.equal(ro.truncatedBytes, Buffer.byteLength(torn), `chunk ${chunkBytes}: the torn bytes are reported`);
    t.equal(await readFile(path, 'utf8'), J.text + torn, 'read-only leaves the tail');
    const scan = await scanJournal(key, runId, path, { chunkBytes });
    t.equal(scan.count, J.lines.length);
    t.equal(scan.size, J.size);
    t.equal(await readFile(path, 'utf8'), J.text, `chunk ${chunkBytes}: the tail is cut`);
    // The cut journal continues where it was: the torn record, appended whole, authenticates.
    await appendFile(path, last);
    t.equal((await scanJournal(key, runId, path, { chunkBytes })).count, whole.lines.length);
  }
});

t.test('a forged record in a later chunk is an error, never skipped', async (t) => {
  const forged = J.text.replace('gate 30 ', 'gate 31 ');
  const path = await file(forged);
  for (const chunkBytes of [64, 4096]) {
    await t.rejects(scanJournal(key, runId, path, { chunkBytes }), JournalAuthError, `chunk ${chunkBytes}`);
  }
  t.equal(await readFile(path, 'utf8'), forged, 'nothing is cut');
});

t.test('a line longer than any record: an error when complete, a torn tail when last', async (t) => {
  const long = `{"seq":40,"pad":"${'p'.repeat(JOURNAL_RECORD_MAX_BYTES + 10)}"}`;
  for (const chunkBytes of [1000, SCAN_CHUNK_BYTES]) {
    const complete = await file(`${J.text + long}\n${J.lines[0]}`);
    await t.rejects(
      scanJournal(key, runId, complete, { chunkBytes }),
      JournalAuthError,
      `chunk ${chunkBytes}`,
    );
    const tail = await file(J.text + long);
    const scan = await scanJournal(key, runId, tail, { chunkBytes });
    t.equal(scan.count, J.lines.length);
    t.equal(
      scan.truncatedBytes,
      long.length,
      `chunk ${chunkBytes}: an unterminated last line is a torn tail`,
    );
    t.equal(await readFile(tail, 'utf8'), J.text);
  }
});

t.test('what a scan mends (a tail cut, a newline written back) is synced before it returns', async (t) => {
  // The scan's caller appends after the mended end at once: an unsynced cut or newline could come
  // back (or go) in a power loss while the records after it were already written.
  const seen = await recordHandleSyncs(t);
  const torn = await realpath(await file(`${J.text}{"seq":40,"prev":"ab`));
  await scanJournal(key, runId, torn);
  t.same(seen, [`truncate ${torn}`, `datasync ${torn}`], 'the cut, then its sync');
  seen.length = 0;
  const unterminated = await realpath(await file(J.text.slice(0, -1)));
  await scanJournal(key, runId, unterminated);
  t.equal(await readFile(unterminated, 'utf8'), J.text, 'the newline is written back');
  t.same(seen, [`datasync ${unterminated}`], 'and synced');
});
