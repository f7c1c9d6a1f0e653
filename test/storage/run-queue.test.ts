import t from 'tap';
import { RunQueue } from '../../src/server/run-queue.js';

const deferred = () => {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
};
const tick = () => new Promise((r) => setImmediate(r));

t.test('runThenSettle frees the run for the next operation before settling, answers after', async (t) => {
  const q = new RunQueue(4, 100);
  const sync = deferred();
  const order: string[] = [];
  const first = q.runThenSettle('r', async () => {
    order.push('first decided');
    return { value: 1, settled: sync.promise };
  });
  let firstAnswered = false;
  void first.then(() => {
    firstAnswered = true;
  });
  const second = q.run('r', async () => {
    order.push('second ran');
    return 2;
  });
  t.equal(await second, 2, 'the next operation ran while the first was unsettled');
  t.same(order, ['first decided', 'second ran']);
  t.equal(firstAnswered, false, 'no answer before the first settles');
  t.equal(q.pending, 1, 'the unsettled operation still counts against the bounds');
  sync.resolve();
  t.equal(await first, 1);
  await tick();
  t.equal(q.pending, 0);
});

t.test('an unsettled operation counts against the per-run bound (503 bridge_busy)', async (t) => {
  const q = new RunQueue(2, 100);
  const sync = deferred();
  const a = q.runThenSettle('r', async () => ({ value: 'a', settled: sync.promise }));
  const b = q.runThenSettle('r', async () => ({ value: 'b', settled: sync.promise }));
  await tick();
  t.throws(() => q.run('r', async () => 'c'), { code: 'bridge_busy' });
  t.equal(await q.run('other', async () => 'd'), 'd', 'other runs are not held up');
  sync.resolve();
  t.same(await Promise.all([a, b]), ['a', 'b']);
  await tick();
  t.equal(await q.run('r', async () => 'e'), 'e');
});

t.test('a settle failure rejects the answer and frees the slot', async (t) => {
  const q = new RunQueue(4, 100);
  const sync = deferred();
  const a = q.runThenSettle('r', async () => ({ value: 'a', settled: sync.promise }));
  sync.reject(new Error('fdatasync failed'));
  await t.rejects(a, { message: 'fdatasync failed' });
  await tick();
  t.equal(q.pending, 0);
  t.equal(await q.run('r', async () => 'b'), 'b');
});

t.test('a failing decision rejects without waiting and frees the slot', async (t) => {
  const q = new RunQueue(4, 100);
  await t.rejects(
    q.runThenSettle('r', async () => {
      throw new Error('refused');
    }),
    { message: 'refused' },
  );
  await tick();
  t.equal(q.pending, 0);
});

t.test('close: later operations are refused, and it resolves once the admitted ones settle', async (t) => {
  const q = new RunQueue(4, 100);
  const sync = deferred();
  const held = deferred();
  const write = q.runThenSettle('r', async () => ({ value: 'w', settled: sync.promise }));
  const read = q.run('s', () => held.promise.then(() => 'read'));
  let drained = false;
  const closing = q.close().then(() => {
    drained = true;
  });
  t.equal(q.closed, true);
  t.throws(() => q.run('other', async () => 'x'), {
    code: 'bridge_busy',
    message: /shutting down/,
    headers: { 'retry-after': '1', connection: 'close' },
  });
  t.throws(() => q.run('r', async () => 'x'), { code: 'bridge_busy' }, 'a busy run too');
  await tick();
  t.equal(drained, false, 'not drained while two operations are pending');
  held.resolve();
  t.equal(await read, 'read', 'an admitted operation still runs and answers');
  await tick();
  t.equal(drained, false, 'the write is not durable yet');
  sync.resolve();
  t.equal(await write, 'w');
  await closing;
  t.equal(q.pending, 0);
  await q.close();
});

t.test('close with nothing pending resolves at once', async (t) => {
  const q = new RunQueue(4, 100);
  await q.close();
  t.equal(q.closed, true);
  t.throws(() => q.runThenSettle('r', async () => ({ value: 1, settled: Promise.resolve() })), {
    code: 'bridge_busy',
  });
});
