import { spawnSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import {
  HEAP_GROWING_PERCENT,
  HeapGrowthGovernor,
  heapGrowthGovernor,
  TURNOVER_PER_SECOND,
} from '../../src/server/heap-growth.js';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';

const MODULE = new URL('../../src/server/heap-growth.js', import.meta.url).href;
const MiB = 1024; // the trace counts in KB

/**
 * The old-generation limits V8 sets after each full collection (`--trace-gc-verbose`: old size and
 * new limit, in KB) in a child that runs `call`, keeps some 60 MiB live and then makes garbage that
 * outlives the young generation (a 1 MiB semi-space promotes it at once). Only limits set over at
 * least 32 MiB of live old generation are kept: below that V8's minimum step (8 MiB) decides.
 */
function limits(call: string): Array<{ old: number; limit: number }> {
  const script = `
    const { setHeapGrowingPercent } = await import(${JSON.stringify(MODULE)});
    ${call};
    const live = (globalThis.live = []);
    for (let i = 0; i < 96; i++) live.push(Array.from({ length: 16384 }, (_, j) => ({ j })));
    const ring = new Array(50000);
    for (let i = 0; i < 6e6; i++) ring[i % ring.length] = { i, s: [i] };`;
  const r = spawnSync(
    process.execPath,
    // A 4 GiB heap limit, whatever this machine's memory: V8 may then grow the heap up to 4x.
    [
      '--max-old-space-size=4096',
      '--max-semi-space-size=1',
      '--trace-gc-verbose',
      '--input-type=module',
      '-e',
      script,
    ],
    { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 },
  );
  if (r.status !== 0) throw new Error(`the child exited ${r.status}: ${r.stderr}`);
  return [...r.stdout.matchAll(/\[HeapController\] Limit: old size: (\d+) KB, new limit: (\d+) KB/g)]
    .map((m) => ({ old: Number(m[1]), limit: Number(m[2]) }))
    .filter((l) => l.old >= 32 * MiB);
}

/** V8's rule for a growing factor f: f times the live size, at least 8 MiB more, plus the young generation (a few MiB here). */
const within = (f: number) => (l: { old: number; limit: number }) =>
  l.limit <= Math.max(f * l.old, l.old + 8 * MiB) + 4 * MiB;

t.test(
  'the bound lets the heap grow by half after each full collection; 0 gives V8 its choice back',
  async (t) => {
    const bounded = limits(`setHeapGrowingPercent(${HEAP_GROWING_PERCENT})`);
    t.ok(bounded.length >= 1, `full collections over 32 MiB of live heap: ${bounded.length}`);
    t.ok(bounded.every(within(1 + HEAP_GROWING_PERCENT / 100)), JSON.stringify(bounded));
    // Set and taken back: V8 chooses again (4x here), so this test can tell the two apart on this Node.
    const free = limits(`setHeapGrowingPercent(${HEAP_GROWING_PERCENT}); setHeapGrowingPercent(0)`);
    t.ok(free.length >= 1 && !free.every(within(1.5)), JSON.stringify(free));
  },
);

t.test(
  'the governor bounds the growth from a second in which the cache turned over until a quieter one',
  async (t) => {
    const set: number[] = [];
    const g = new HeapGrowthGovernor((p) => set.push(p));
    for (let i = 1; i < TURNOVER_PER_SECOND; i++) g.noteEviction();
    t.same(set, [], 'one eviction short of the turnover: unbounded');
    g.noteEviction();
    t.same(set, [HEAP_GROWING_PERCENT]);
    t.ok(g.bounded);
    for (let i = 0; i < TURNOVER_PER_SECOND; i++) g.noteEviction();
    await sleep(1150);
    t.same(set, [HEAP_GROWING_PERCENT], 'still turning over after a second: still bounded, not set again');
    t.ok(g.bounded);
    g.noteEviction();
    await sleep(1000);
    t.same(set, [HEAP_GROWING_PERCENT, 0], 'a second with fewer: V8 chooses again');
    t.notOk(g.bounded);
  },
);

t.test('evictions spread wider than a second never bound the growth', async (t) => {
  const set: number[] = [];
  let clock = 0;
  const g = new HeapGrowthGovernor(
    (p) => set.push(p),
    () => clock,
  );
  for (let i = 0; i < 4 * TURNOVER_PER_SECOND; i++) {
    clock += 1000 / (TURNOVER_PER_SECOND - 2); // 32 evictions over 1033 ms
    g.noteEviction();
  }
  t.same(set, []);
  t.notOk(g.bounded);
});

t.test('a growth set on the command line stands', async (t) => {
  t.equal(heapGrowthGovernor(['--heap_growing_percent=20']), null);
  t.equal(heapGrowthGovernor(['--heap-growing-percent=0']), null);
  t.type(heapGrowthGovernor(['--max-old-space-size=512']), HeapGrowthGovernor);
});

t.test('every run leaving the open-run cache to make room is told', async (t) => {
  let evicted = 0;
  const b = await startTestBridge(undefined, { storage: { cacheSize: 2 }, onEvict: () => evicted++ });
  t.teardown(() => cleanup(b));
  for (let i = 0; i < 5; i++) {
    const r = await b.req('POST', `/runs/evict-${i}/events`, ev({ id: `e-${i}` }));
    t.equal(r.status, 201);
  }
  t.equal(evicted, 3);
});
