import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import t from 'tap';
import { runDirName } from '../../src/storage/paths.js';
import { RunDirSet } from '../../src/storage/run-dir-set.js';
import { IndexFile, readIndexFile } from '../../src/storage/run-index-file.js';
import { type PackedEntry, packEntries, readPacked } from '../../src/storage/run-index-packed.js';
import { type IndexedRun, RunTable } from '../../src/storage/run-table.js';

/**
 * Packed blocks of the run index (storage/run-index-packed.ts): what a rewrite writes is read back
 * entry for entry, and a packed block that is not as the writer makes it is refused whole.
 */

const key = Buffer.alloc(32, 7);
const PIN = 'f'.repeat(64);
const MS = Date.UTC(2026, 10, 1);

const run = (i: number, over: Partial<IndexedRun> = {}): IndexedRun => ({
  runId: `run-${i}`,
  createdAt: new Date(MS + i).toISOString(),
  count: i,
  head: i % 2 === 0 ? (i % 256).toString(16).padStart(2, '0').repeat(32) : null,
  summary: i % 3 === 0 ? null : JSON.stringify(['running', `title é ${i}`]),
  ...over,
});

const packed = (r: IndexedRun): PackedEntry => ({
  run: r,
  createdMs: Date.parse(r.createdAt),
  dirHex: runDirName(r.runId).slice(4),
});

async function tempIndex(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'harness-packed-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'runs-index.log');
}

async function write(path: string, entries: IndexedRun[]): Promise<void> {
  const file = await IndexFile.open(path, key, PIN, { kind: 'absent' });
  await file.rewrite(entries);
  await file.close();
}

t.test('a rewrite packs its entries, and a start reads every one back as it was', async (t) => {
  const path = await tempIndex(t);
  // Enough for several packed blocks (about 1 MiB each), and entries a packed block cannot hold.
  const entries = Array.from({ length: 12_000 }, (_, i) => run(i));
  entries.push(
    run(12_000, { createdAt: '2026-11-01 10:00' }),
    run(12_001, { createdAt: '1970-01-01T00:00:00.000Z' }),
  );
  await write(path, entries);
  const text = (await readFile(path)).toString('latin1');
  t.ok((text.match(/\n=packed\n/g) ?? []).length >= 2, 'several packed blocks');
  t.match(
    text,
    /\nrun-12000\trun-[0-9a-f]{64}\t2026-11-01 10:00\t/,
    'a time toISOString does not write stays a text line',
  );
  const read = await readIndexFile(path, key, PIN);
  t.equal(read.kind, 'read');
  if (read.kind !== 'read') return;
  t.equal(read.lines, entries.length + 1, 'the pin line and every entry');
  const byId = (a: IndexedRun, b: IndexedRun) => (a.runId < b.runId ? -1 : 1);
  t.same(
    [...read.runs.values()].sort(byId),
    [...entries].sort(byId),
    'each entry as written: ID, time, count, head and summary',
  );
  for (const e of [entries[0]!, entries[7777]!, entries[12_000]!])
    t.equal(read.dirs?.has(runDirName(e.runId)), true, `${e.runId}'s directory is indexed`);
  t.equal(read.dirs?.size, entries.length);
});

t.test('text blocks appended after the packed ones replace and remove packed entries', async (t) => {
  const path = await tempIndex(t);
  await write(path, [run(1), run(2), run(3)]);
  const read = await readIndexFile(path, key, PIN);
  const file = await IndexFile.open(path, key, PIN, read);
  await file.append([run(2, { count: 9, summary: '["completed"]' })], ['run-3']);
  await file.close();
  const again = await readIndexFile(path, key, PIN);
  t.equal(again.kind, 'read');
  if (again.kind !== 'read') return;
  t.same([...again.runs.values()], [run(1), run(2, { count: 9, summary: '["completed"]' })]);
  t.equal(again.dirs?.has(runDirName('run-3')), false, "the removed run's directory is no longer indexed");
});

t.test('a packed block not as the writer makes it is malformed, and nothing of it is used', async (t) => {
  const good = [run(1), run(2), run(3)];
  const body = packEntries(good.map(packed));
  const readInto = (b: Buffer, table = new RunTable(), dirs = new RunDirSet()) => readPacked(b, table, dirs);
  t.equal(readInto(body), 3, 'the block as written');
  // Offsets in the body: the mark (8), the count (4), the ID lengths (3) and the IDs (15).
  const created = 8 + 4 + 3 + 15;
  const counts = created + 3 * 8;
  const hasHead = counts + 3 * 8;
  const summaryLengths = hasHead + 3 + 2 * 3 * 32;
  const edited = (at: number, write: (b: Buffer) => void) => {
    const b = Buffer.from(body);
    write(b.subarray(at));
    return b;
  };
  const cases: [string, Buffer][] = [
    ['cut short', body.subarray(0, body.length - 1)],
    ['bytes left over', Buffer.concat([body, Buffer.from([0])])],
    ['a count past the entries', edited(8, (b) => b.writeUInt32LE(4))],
    ['an empty run ID', edited(12, (b) => b.writeUInt8(0))],
    ['a time that is not whole milliseconds', edited(created, (b) => b.writeDoubleLE(MS + 0.5))],
    ['a time before year 1000', edited(created, (b) => b.writeDoubleLE(Date.UTC(999, 0, 1)))],
    ['a time after year 9999', edited(created, (b) => b.writeDoubleLE(Date.UTC(10000, 0, 1)))],
    ['a negative record count', edited(counts, (b) => b.writeDoubleLE(-1))],
    ['a record count past 2^53', edited(counts, (b) => b.writeDoubleLE(2 ** 53))],
    ['a head flag other than 0 or 1', edited(hasHead, (b) => b.writeUInt8(2))],
    ['a summary longer than the block', edited(summaryLengths, (b) => b.writeUInt32LE(1_000))],
    ['a summary shorter than its bytes', edited(summaryLengths, (b) => b.writeUInt32LE(1))],
  ];
  for (const [what, b] of cases) t.equal(readInto(b), -1, what);
  for (const [what, id] of [
    ['a tab', 'a\tb'],
    ['a line feed', 'a\nb'],
    ['a byte above ASCII', 'a\u00ffb'],
  ]) {
    const odd = packEntries([packed(run(1, { runId: id! }))]);
    t.equal(readInto(odd), -1, `a run ID with ${what}: a text line would split it`);
  }
  const twice = packEntries([packed(run(1)), packed(run(1))]);
  t.equal(readInto(twice), -1, 'a run ID twice in one block');
  const table = new RunTable();
  const dirs = new RunDirSet();
  t.equal(readInto(body, table, dirs), 3);
  t.equal(
    readInto(packEntries([packed(run(4)), packed(run(2))]), table, dirs),
    -1,
    'a run ID an earlier block holds',
  );
});

t.test(
  'an index whose packed block is malformed is untrusted: the run directories are read instead',
  async (t) => {
    const path = await tempIndex(t);
    await write(path, [run(1), run(2)]);
    const data = await readFile(path);
    // The same block with one byte of its count changed fails its MAC; so does any edit.
    const at = data.indexOf('=packed\n') + 8;
    data[at]! ^= 1;
    await writeFile(path, data);
    const read = await readIndexFile(path, key, PIN);
    t.equal(read.kind, 'untrusted');
  },
);
