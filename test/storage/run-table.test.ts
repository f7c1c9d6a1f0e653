import t from 'tap';
import { runDirName } from '../../src/storage/paths.js';
import { RunDirSet } from '../../src/storage/run-dir-set.js';
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
  // Superseded bytes are dropped once they pass 1 MiB and outweigh the live ones.
  const arena = (table as unknown as { arena: Buffer }).arena.length;
  const live = 1000 * big(999, 39).length;
  t.ok(arena <= 2 * (live + 1024 * 1024), `arena of ${arena} bytes for ${live} live bytes`);
});

t.test('a head MAC must be 64 lowercase hex digits', async (t) => {
  const table = new RunTable();
  t.throws(() => table.set('a', { ...entry(1), head: 'AB'.repeat(32) }), RangeError);
  t.throws(() => table.set('a', { ...entry(1), head: 'ab' }), RangeError);
  table.set('a', { ...entry(1), head: 'ab'.repeat(32) });
  t.equal(table.get('a')!.head, 'ab'.repeat(32));
});

t.test('the run directory set finds, marks and forgets directories by name', async (t) => {
  const dirs = new RunDirSet();
  const names = Array.from({ length: 3000 }, (_, i) => runDirName(`run-${i}`));
  t.ok(
    names.every((name, i) => dirs.add(Buffer.from(name.slice(4)), 0, `run-${i}`)),
    'each directory added',
  );
  t.equal(dirs.add(Buffer.from('g'.repeat(64)), 0, 'x'), false, 'not hex');
  t.equal(dirs.add(Buffer.from('A'.repeat(64)), 0, 'x'), false, 'not lowercase');
  t.equal(dirs.size, 3000);
  t.equal(dirs.has(runDirName('run-3000')), false);
  t.equal(dirs.has(`${names[5]!.slice(0, -1)}`), false, 'a name cut short');
  t.equal(dirs.has(names[5]!.toUpperCase()), false);
  for (let i = 0; i < 3000; i += 3) t.equal(dirs.delete(names[i]!), true);
  t.equal(dirs.delete(names[0]!), false);
  t.equal(dirs.size, 2000);
  for (let i = 1; i < 3000; i += 3) t.equal(dirs.mark(names[i]!), `run-${i}`);
  t.equal(dirs.mark(names[0]!), undefined, 'a deleted directory');
  t.same(
    dirs.unmarked(),
    names.flatMap((_, i) => (i % 3 === 2 ? [`run-${i}`] : [])),
    'the directories not found',
  );
  dirs.add(Buffer.from(names[0]!.slice(4)), 0, 'run-0');
  t.equal(dirs.has(names[0]!), true, 'added again after deletion');
});
