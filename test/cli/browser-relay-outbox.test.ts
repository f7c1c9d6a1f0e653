import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { cleanup, restartTestBridge, startTestBridge } from '../helpers/bridge.js';
import { bridgeClientEnv } from '../helpers/cli.js';
import { json } from '../helpers/recording-upstream.js';
import {
  events,
  newRun,
  PAGE,
  pageEv,
  postFrom,
  startRelayCli,
  startStubbedRelay,
} from '../helpers/relay.js';
import { pause } from '../helpers/watcher.js';

/**
 * `harness browser-relay` with the bridge down, slow or failing (docs/sources.md): the page is
 * answered 202, the event waits in the run's outbox with its id, and is delivered once, in order,
 * by the relay's own retries, the next post, or a stop.
 */

t.test('the bridge down: events wait in the outbox and are delivered once, in order', async (t) => {
  let b = await startTestBridge();
  const te = b.t;
  t.teardown(async () => cleanup(b));
  const port = new URL(b.url).port;
  const env = bridgeClientEnv(b);
  await newRun(b, 'r-down');
  const relay = await startRelayCli(t, env, 'r-down', [PAGE]);
  const first = await postFrom(PAGE, relay.url, pageEv({ message: 'before' }));
  t.equal(first.status, 201);

  await b.close();
  const queued = [];
  for (const message of ['down 1', 'down 2', 'down 3']) {
    const r = await postFrom(PAGE, relay.url, pageEv({ message }));
    t.same([r.status, r.body['queued']], [202, true], JSON.stringify(r.body));
    t.equal(r.headers.get('access-control-allow-origin'), PAGE, 'the page reads that it is queued');
    queued.push(r.body['id']);
  }
  t.match(relay.stderr(), /waits in the outbox/);
  const outbox = await readFile(join(env['HOME']!, '.harness', 'outbox', 'run-r-down.jsonl'), 'utf8');
  t.same(
    outbox
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l).event.id),
    queued,
    'the outbox holds them in order, with their ids',
  );

  b = await restartTestBridge(te, port);
  // Nothing else posted: the relay offers the outbox again by itself.
  const deadline0 = Date.now() + 15_000;
  while ((await events(b, 'r-down')).length < 4 && Date.now() < deadline0) await pause(100);
  t.equal((await events(b, 'r-down')).length, 4, 'delivered without another post');

  await b.close();
  t.equal((await postFrom(PAGE, relay.url, pageEv({ message: 'down 4' }))).status, 202);
  b = await restartTestBridge(te, port);
  // Posted once the bridge is back: it goes behind the queued one, never ahead.
  const after = await postFrom(PAGE, relay.url, pageEv({ message: 'after' }));
  t.equal(after.status, 201, JSON.stringify(after.body));
  const deadline = Date.now() + 15_000;
  while ((await events(b, 'r-down')).length < 6 && Date.now() < deadline) await pause(100);
  t.same(
    (await events(b, 'r-down')).map((e) => `${e['message']} ${e['eventSource']}`),
    ['before', 'down 1', 'down 2', 'down 3', 'down 4', 'after'].map((m) => `${m} browser-local`),
    'each once, in the order the page posted them',
  );
  t.equal(
    await readFile(join(env['HOME']!, '.harness', 'outbox', 'run-r-down.jsonl'), 'utf8').catch(() => ''),
    '',
  );
  t.equal(await relay.stop(), 0);
  t.match(relay.records.at(-1), { runId: 'r-down', delivered: 6, queued: 4, waiting: 0 });
});

t.test('stopped while the bridge is down: exit 0, the events stay in the outbox', async (t) => {
  const b = await startTestBridge();
  t.teardown(async () => cleanup(b));
  const env = bridgeClientEnv(b);
  await newRun(b, 'r-left');
  const relay = await startRelayCli(t, env, 'r-left', [PAGE]);
  await b.close();
  t.equal((await postFrom(PAGE, relay.url, pageEv())).status, 202);
  t.equal(await relay.stop('SIGTERM'), 0, relay.stderr());
  t.match(relay.records.at(-1), { runId: 'r-left', delivered: 0, queued: 1, waiting: 1 });
  t.match(relay.stderr(), /harness outbox flush/);
});

t.test('a slow bridge or a 5xx: the page is answered 202 and the event waits', async (t) => {
  let mode: 'hang' | '503' = 'hang';
  const { home, relay } = await startStubbedRelay(
    t,
    'r-slow',
    (req, res) =>
      mode === '503'
        ? json(503, { ok: false, error: 'bridge_busy', message: 'busy', problems: [] })(req, res)
        : undefined, // never answered
  );
  const slow = await postFrom(PAGE, relay.url, pageEv({ message: 'slow' }));
  t.same([slow.status, slow.body['queued']], [202, true], 'no answer within 5 s');
  mode = '503';
  const busy = await postFrom(PAGE, relay.url, pageEv({ message: 'busy' }));
  t.same([busy.status, busy.body['queued']], [202, true], 'a 5xx');
  const outbox = await readFile(join(home, '.harness', 'outbox', 'run-r-slow.jsonl'), 'utf8');
  t.same(
    outbox
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l).event.message),
    ['slow', 'busy'],
  );
  t.equal(await relay.stop(), 0);
  t.match(relay.records.at(-1), { delivered: 0, queued: 2, waiting: 2 });
});

t.test('a stop offers the outbox once more: what waits is delivered before it exits', async (t) => {
  let b = await startTestBridge();
  const te = b.t;
  t.teardown(async () => cleanup(b));
  const port = new URL(b.url).port;
  const env = bridgeClientEnv(b);
  await newRun(b, 'r-stop');
  const relay = await startRelayCli(t, env, 'r-stop', [PAGE]);
  await b.close();
  t.equal((await postFrom(PAGE, relay.url, pageEv({ message: 'queued' }))).status, 202);
  // The relay's own retries back off (250 ms doubling): after 4 s the next one is seconds away.
  await pause(4000);
  b = await restartTestBridge(te, port);
  t.equal(await relay.stop(), 0);
  t.match(relay.records.at(-1), { runId: 'r-stop', delivered: 1, queued: 1, waiting: 0 });
  t.same(
    (await events(b, 'r-stop')).map((e) => e['message']),
    ['queued'],
  );
});

t.test('one event at a time: the next is posted only once the bridge answered the one before', async (t) => {
  const order: string[] = [];
  const { upstream, relay } = await startStubbedRelay(t, 'r-serial', (req, res) => {
    const n = upstream.received.filter((r) => r.method === 'POST').length;
    order.push(`post ${n}`);
    // The first answer comes late: a second post would overtake it if the relay did not wait.
    setTimeout(
      () => {
        order.push(`answer ${n}`);
        json(201, { ok: true, seq: n, event: {}, run: {} })(req, res);
      },
      n === 1 ? 300 : 0,
    );
  });
  const first = postFrom(PAGE, relay.url, pageEv({ message: 'first' }));
  while (order.length === 0) await pause(10);
  const second = postFrom(PAGE, relay.url, pageEv({ message: 'second' }));
  t.same([(await first).body['seq'], (await second).body['seq']], [1, 2]);
  t.same(order, ['post 1', 'answer 1', 'post 2', 'answer 2']);
  t.equal(await relay.stop(), 0);
});

t.test('at most 64 requests wait their turn; the rest are told to retry', async (t) => {
  const { relay } = await startStubbedRelay(t, 'r-full', () => undefined); // never answered
  // 70 at once: whatever order they arrive in, 64 wait (the first with the bridge) and 6 are 503.
  const busy: (string | null)[] = [];
  const requests = Array.from({ length: 70 }, (_, i) =>
    postFrom(PAGE, relay.url, pageEv({ message: `r${i}` })).then(
      (r) => r.status === 503 && busy.push(`${r.body['error']} ${r.headers.get('retry-after')}`),
      () => null,
    ),
  );
  const deadline = Date.now() + 5000;
  while (busy.length < 6 && Date.now() < deadline) await pause(20);
  await pause(300);
  t.same(busy, Array(6).fill('bridge_busy 1'));
  await relay.stop('SIGKILL');
  await Promise.all(requests);
});
