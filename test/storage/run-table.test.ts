import t from 'tap';
import { runDirName } from '../../src/storage/paths.js';
import { RunDirSet } from '../../src/storage/run-dir-set.js';
import { RunIds } from '../../src/storage/run-ids.js';
import { RunIndex } from '../../src/storage/run-index.js';
import { RunTable } from '../../src/storage/run-table.js';

/**
 * The run index's columns (storage/run-table.ts) and its set of run directories
 * (storage/run-dir-set.ts): what goes in comes out exactly, past growth, reuse and compaction.
 */

const entry = (i: number, over: Partial<Parameters<RunTable['set']>[1]> = {}) => ({
  runId: `run-${i}`,
  createdAt: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
  count: i,
  head: i % 2 === 0 ? null : i.toString(16).padStart(64, '0'),
  summary:
    i % 3 === 0 ? null : JSON.stringify([`title ${i} ✓`, 'running', 'live', false, 'now', 'intake', i, 0]),
  ...over,
});

t.test('entries come out as they went in, past growth and slot reuse', async (t) => {
  const table = new RunTable();
  for (let i = 0; i < 5000; i++) table.set(`run-${i}`, entry(i));
  for (let i = 0; i < 5000; i += 7) t.equal(table.delete(`run-${i}`), true);
  t.equal(table.delete('run-0'), false, 'a run deleted twice');
  for (let i = 5000; i < 5500; i++) table.set(`run-${i}`, entry(i));
  t.equal(table.size, 5500 - Math.ceil(5000 / 7));
  let checked = 0;
  for (let i = 0; i < 5500; i++) {
    const got = table.get(`run-${i}`);
    if (i < 5000 && i % 7 === 0) {
      if (got !== undefined) t.fail(`run-${i} deleted, but read back`);
    } else if (JSON.stringify(got) !== JSON.stringify(entry(i))) t.fail(`run-${i}: ${JSON.stringify(got)}`);
    else checked++;
  }
  t.equal(checked, table.size, 'every live entry exact');
  t.same([...table.values()].length, table.size);
});

t.test('an entry rewritten takes every new field, and deleted slots are reused', async (t) => {
  const table = new RunTable();
  table.set('a', entry(1));
  table.set('a', entry(2, { runId: 'a' }));
  t.same(table.get('a'), entry(2, { runId: 'a' }), 'the head MAC and summary gone again');
  const capacity = () => (table as unknown as { flags: Uint8Array }).flags.length;
  for (let i = 0; i < 1000; i++) table.set(`b${i}`, entry(i));
  const before = capacity();
  for (let round = 0; round < 5; round++)
    for (let i = 0; i < 1000; i++) {
      table.delete(`b${i}`);
      table.set(`b${i}`, entry(i));
    }
  t.equal(capacity(), before, 'no growth from runs removed and added');
});

t.test('a creation time toISOString would not write is kept as text', async (t) => {
  const table = new RunTable();
  const odd = [
    '1970-01-01T00:00:00.000Z',
    '2026-02-30T00:00:00.000Z',
    '2026-13-01T00:00:00.000Z',
    '2024-02-29T23:59:59.999Z',
    '2026-01-01T00:00:00Z',
    '0999-01-01T00:00:00.000Z',
    '2026-01-01T24:00:00.000Z',
    'not a time',
    'ünïcode',
    '',
  ];
  for (const [i, createdAt] of odd.entries()) table.set(`r${i}`, { ...entry(i), runId: `r${i}`, createdAt });
  t.same(
    odd.map((_, i) => table.get(`r${i}`)!.createdAt),
    odd,
  );
  t.ok(Number.isNaN(table.createdMs(table.slotOf('r1')!)), 'February 30th is text');
  t.equal(table.createdMs(table.slotOf('r3')!), Date.parse(odd[3]!), 'a leap day is a time');
});

t.test('summaries rewritten many times keep the arena bounded and every summary exact', async (t) => {
  const table = new RunTable();
  const big = (i: number, round: number) => JSON.stringify([`${'x'.repeat(400)} ${i} ${round}`]);
  for (let i = 0; i < 1000; i++) table.set(`run-${i}`, { ...entry(i), summary: big(i, 0) });
  for (let round = 1; round < 40; round++)
    for (let i = 0; i < 1000; i++) table.setSummary(table.slotOf(`run-${i}`)!, big(i, round));
  const wrong = [...table.values()].filter((e) => e.summary !== big(Number(e.runId.slice(4)), 39));
  t.same(wrong, [], 'each run has its latest summary');
  // Superseded bytes are dropped once they pass 1 MiB and a quarter of the live ones.
  const live = 1000 * big(999, 39).length;
  t.ok(
    summaryArena(table) <= 2 * live + 1.5 * 1024 * 1024,
    `arena of ${summaryArena(table)} bytes for ${live} live`,
  );
});

const summaryArena = (table: RunTable): number =>
  (table as unknown as { summaries: { bytes: Buffer } }).summaries.bytes.length;

t.test('the summary arena holds about its live bytes: rewrites that fit go in place', async (t) => {
  // 6 MiB of live summaries, past the 1 MiB of garbage the arena keeps whatever its size.
  const runs = 6000;
  const text = (i: number, round: number) => `${round % 2 === 0 ? 'a' : 'b'}${'x'.repeat(1000 + (i % 7))}`;
  const table = new RunTable();
  for (let i = 0; i < runs; i++) table.set(`run-${i}`, { ...entry(i), summary: text(i, 0) });
  const grown = summaryArena(table);
  for (let round = 1; round < 10; round++)
    for (let i = 0; i < runs; i++) table.setSummary(table.slotOf(`run-${i}`)!, text(i, round));
  t.equal(summaryArena(table), grown, 'a summary of the same length is written over the old one');
  for (let i = 0; i < runs; i++) table.setSummary(table.slotOf(`run-${i}`)!, text(i, 0).slice(0, 500));
  t.equal(summaryArena(table), grown, 'and a shorter one');
  const live = () => [...table.values()].reduce((n, e) => n + Buffer.byteLength(e.summary!), 0);
  // Lengths that go up and down: each outgrown slot leaves its old bytes behind.
  for (let round = 1; round < 30; round++)
    for (let i = 0; i < runs; i++)
      table.setSummary(table.slotOf(`run-${i}`)!, 'y'.repeat(500 + ((i * 31 + round * 977) % 1000)));
  t.ok(
    summaryArena(table) <= 2 * live() + 1.5 * 1024 * 1024,
    `${summaryArena(table)} bytes for ${live()} live`,
  );
  t.ok(summaryArena(table) >= live(), 'every live byte has its place');
  const wrong = [...table.values()].filter(
    (e) => e.summary !== 'y'.repeat(500 + ((Number(e.runId.slice(4)) * 31 + 29 * 977) % 1000)),
  );
  t.same(wrong, [], 'each run has its latest summary');
});

t.test('a head MAC must be 64 lowercase hex digits', async (t) => {
  const table = new RunTable();
  t.throws(() => table.set('a', { ...entry(1), head: 'AB'.repeat(32) }), RangeError);
  t.throws(() => table.set('a', { ...entry(1), head: 'ab' }), RangeError);
  table.set('a', { ...entry(1), head: 'ab'.repeat(32) });
  t.equal(table.get('a')!.head, 'ab'.repeat(32));
});

t.test('a directory added as the set grows is forgotten when deleted, as every other', async (t) => {
  // Sized for 1024: the 1025th add grows the table, which must not hold that directory twice.
  const dirs = new RunDirSet(1024);
  const names = Array.from({ length: 2100 }, (_, i) => runDirName(`grow-${i}`));
  t.ok(
    names.every((name, i) => dirs.add(Buffer.from(name.slice(4)), 0, i)),
    'each directory added',
  );
  for (const name of names) dirs.delete(name);
  t.same(
    names.filter((name) => dirs.has(name)),
    [],
    'no directory left',
  );
  t.equal(dirs.size, 0);
});

t.test('the run directory set finds, marks and forgets directories by name', async (t) => {
  const dirs = new RunDirSet(0, (slot) => `run-${slot}`);
  const names = Array.from({ length: 3000 }, (_, i) => runDirName(`run-${i}`));
  t.ok(
    names.every((name, i) => dirs.add(Buffer.from(name.slice(4)), 0, i)),
    'each directory added',
  );
  t.equal(dirs.add(Buffer.from('g'.repeat(64)), 0, 1), false, 'not hex');
  t.equal(dirs.add(Buffer.from('A'.repeat(64)), 0, 1), false, 'not lowercase');
  t.equal(dirs.size, 3000);
  t.equal(dirs.has(runDirName('run-3000')), false);
  t.equal(dirs.has(`${names[5]!.slice(0, -1)}`), false, 'a name cut short');
  t.equal(dirs.has(names[5]!.toUpperCase()), false);
  for (let i = 0; i < 3000; i += 3) t.equal(dirs.delete(names[i]!), true);
  t.equal(dirs.delete(names[0]!), false);
  t.equal(dirs.size, 2000);
  for (let i = 1; i < 3000; i += 3) t.equal(dirs.mark(names[i]!), true);
  t.equal(dirs.mark(names[0]!), false, 'a deleted directory');
  t.same(
    dirs.unmarked(),
    names.flatMap((_, i) => (i % 3 === 2 ? [`run-${i}`] : [])),
    'the directories not found',
  );
  dirs.add(Buffer.from(names[0]!.slice(4)), 0, 0);
  t.equal(dirs.has(names[0]!), true, 'added again after deletion');
});

t.test('run IDs as bytes: found by text and by bytes, past growth, removal and compaction', async (t) => {
  const table = new RunTable();
  const ids = Array.from({ length: 4000 }, (_, i) => `r${i}.x_${'y'.repeat(i % 97)}`);
  for (const id of ids) table.newSlot(id);
  const line = Buffer.from(`\t${ids[1234]}\t`);
  t.equal(
    table.slotOfBytes(line, 1, line.length - 1),
    table.slotOf(ids[1234]!),
    'bytes and text find one slot',
  );
  t.equal(table.slotOfBytes(line, 1, line.length - 2), undefined, 'a prefix is another ID');
  t.equal(table.slotOf(`${ids[5]!}z`), undefined);
  t.equal(table.slotOf('r5.x_yyyyy'.replace('r5', 'r6')), undefined);
  t.equal(table.slotOf('ü'), undefined, 'text no ID can be');
  t.throws(() => table.newSlot('ü\u0100'), RangeError, 'an ID outside latin1 is refused');
  t.throws(() => table.newSlot(''), RangeError);
  t.equal(table.size, ids.length, 'a refused ID takes no slot');
  for (let round = 0; round < 6; round++) {
    for (let i = round % 2; i < ids.length; i += 2) t.equal(table.delete(ids[i]!), true);
    for (let i = round % 2; i < ids.length; i += 2) table.newSlot(ids[i]!);
  }
  const wrong = ids.filter((id) => {
    const slot = table.slotOf(id);
    return slot === undefined || table.runId(slot) !== id;
  });
  t.same(wrong, [], 'every ID found in its slot, and read back');
  t.equal(new Set(ids.map((id) => table.slotOf(id))).size, ids.length, 'one slot each');
  const held = (table as unknown as { ids: { ids: { bytes: Buffer } } }).ids.ids.bytes.length;
  const live = ids.reduce((n, id) => n + id.length, 0);
  t.ok(held <= 2 * (live + 256 * 1024), `ID arena of ${held} bytes for ${live} live bytes`);
});

t.test('the run ID hash is seeded per table: two tables probe the same IDs differently', async (t) => {
  const first = new RunIds(1024, 0);
  const second = new RunIds(1024, 0);
  for (let i = 0; i < 200; i++) {
    first.add(i, `run-${i}`);
    second.add(i, `run-${i}`);
  }
  const cells = (ids: RunIds) => [...(ids as unknown as { table: Int32Array }).table].join();
  t.not(cells(first), cells(second), 'the same IDs land in other cells');
  t.equal(second.find('run-199'), 199);
});

t.test('an ID is never found by another that starts or ends with it', async (t) => {
  // Two slots in a table of four cells: most lookups probe the cell of the one stored ID.
  const ids = new RunIds(2, 0);
  const stored = `a${'b'.repeat(198)}`;
  ids.add(0, stored);
  const prefixes = Array.from({ length: stored.length - 1 }, (_, n) => stored.slice(0, n + 1));
  t.same(
    prefixes.filter((p) => ids.find(p) !== -1),
    [],
    'no prefix of the ID found as text',
  );
  const longer = Array.from({ length: 200 }, (_, k) => `${stored}${k}`);
  const asBytes = (texts: string[]) =>
    texts.filter((text) => ids.findBytes(Buffer.from(text), 0, text.length) !== -1);
  t.same(asBytes(prefixes), [], 'no prefix of the ID found as bytes');
  t.same(asBytes(longer), [], 'no longer ID found as bytes');
  t.same(
    longer.filter((text) => ids.find(text) !== -1),
    [],
    'no longer ID found as text',
  );
  t.equal(ids.find(stored), 0);
  t.equal(ids.findBytes(Buffer.from(`x${stored}x`), 1, stored.length + 1), 0);
});

t.test(
  "the index's entries, as a rewrite reads them, skip a run removed meanwhile and not its slot's next run",
  async (t) => {
    const index = new RunIndex(100);
    for (let i = 0; i < 4; i++) index.add(entry(i));
    const read: string[] = [];
    for (const e of index.all()) {
      read.push(e.runId);
      if (e.runId === 'run-0') {
        index.remove('run-2');
        index.add(entry(9)); // takes run-2's slot
      }
    }
    t.same(read, ['run-0', 'run-1', 'run-3'], 'run-9 came after the read began');
    t.same(
      [...index.all()].map((e) => e.runId),
      ['run-0', 'run-1', 'run-3', 'run-9'],
    );
  },
);
