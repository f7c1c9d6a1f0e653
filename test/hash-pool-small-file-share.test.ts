import { mkdir, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import t from 'tap';
import { cleanup, ev, makeTestEnv, startTestBridge } from './helpers/bridge.js';
import { complete, driveToReady } from './helpers/complete-run.js';
import { timed } from './helpers/expect.js';

/**
 * Issue 28 item 7: one run's huge artifact must not delay another run's events. Files over 8 MiB
 * hash in at most HARNESS_WORKERS pool threads, and the pool has one thread more, so while large
 * files (here two runs' 3 GiB, below the ceiling, but seconds of hashing each) take every thread
 * they may, another run's 1 MiB artifact (hashed in the pool, not inline) and a completed run's
 * re-verification are answered at once, not after them.
 */
const GiB = 1024 ** 3;

t.test('a large hash in progress does not hold back another run’s small artifact or read', async (t) => {
  const te = await makeTestEnv();
  te.env['HARNESS_WORKERS'] = '1';
  te.env['HARNESS_ARTIFACT_MAX_BYTES'] = String(8 * GiB);
  te.env['HARNESS_REHASH_TIMEOUT_MS'] = '600000';
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'reader');
  t.equal((await complete(b, 'reader')).status, 201);

  const bigRoot = join(te.dir, 'big-root');
  await mkdir(join(bigRoot, 'run'), { recursive: true });
  await writeFile(join(bigRoot, 'run/intake.json'), '');
  await truncate(join(bigRoot, 'run/intake.json'), 3 * GiB);
  const smallRoot = join(te.dir, 'small-root');
  await mkdir(join(smallRoot, 'run'), { recursive: true });
  await writeFile(join(smallRoot, 'run/intake.json'), Buffer.alloc(1024 * 1024, 's'));
  const claim = (runId: string) =>
    b.req('POST', `/runs/${runId}/events`, ev({ type: 'artifact.written', artifact: 'run/intake.json' }));
  for (const runId of ['big', 'big2'])
    t.equal((await b.req('POST', `/runs/${runId}/events`, ev({ artifactRoot: bigRoot }))).status, 201);
  t.equal((await b.req('POST', '/runs/small/events', ev({ artifactRoot: smallRoot }))).status, 201);
  t.equal((await claim('small')).status, 201, 'a pool thread has started');

  // Another run's answers must not wait for a large file: each takes a fraction of the time the
  // first large file takes to be answered (with no share left to small files, about all of it).
  const started = performance.now();
  let firstBig = Number.POSITIVE_INFINITY;
  const big = Promise.all(
    ['big', 'big2'].map((runId) =>
      claim(runId).finally(() => {
        firstBig = Math.min(firstBig, performance.now() - started);
      }),
    ),
  );
  await delay(300);
  t.equal(firstBig, Number.POSITIVE_INFINITY, 'the two 3 GiB files are being hashed');
  const small = await timed(() => claim('small'));
  t.equal(small.res.status, 201);
  const read = await timed(() => b.req('GET', '/runs/reader'));
  t.equal(read.res.body['run'].status, 'completed');
  const list = await timed(() => b.req('GET', '/runs'));
  t.equal(list.res.status, 200);
  const answered = await big;
  for (const [what, { ms }] of Object.entries({ small, read, list }))
    t.ok(
      ms * 3 < firstBig,
      `${what}: ${Math.round(ms)} ms; the first large file: ${Math.round(firstBig)} ms`,
    );
  t.same(
    answered.map((r) => r.status),
    [201, 201],
    'the large files, below the ceiling, are claimed',
  );
});
