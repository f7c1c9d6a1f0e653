import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { rm } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import t from 'tap';
import { cleanup, ev, makeTestEnv, startTestBridge } from '../helpers/bridge.js';
import { allEvents } from '../helpers/expect.js';
import { CLI } from '../helpers/paths.js';

/**
 * CONTRACT 7 when the disk refuses a write: a real bridge under a file-size limit (`ulimit -f`, the
 * way a full disk fails a write partway) keeps running and answers 500 (SIGXFSZ would otherwise
 * end it mid-write). After a restart without the limit, every event answered 2xx is there, and no
 * event answered 500 is: a log write that failed partway is cut back, so its records, whole or not,
 * are not replayed. While the log is failed, the run list answers 500 rather than count them.
 * Needs `npm run build`.
 */
const RUNS = ['wf-0', 'wf-1', 'wf-2'];

async function limitedBridge(env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  // dash counts -f in 512-byte blocks: the data directory's files stop at 10 KiB.
  const child = spawn('/bin/sh', ['-c', 'ulimit -f 20 && exec "$0" "$@"', process.execPath, CLI, 'bridge'], {
    env,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  for await (const line of createInterface({ input: child.stdout! })) {
    const m = /^Server listening at (http:\/\/\S+)$/.exec(line);
    if (m) return { child, url: m[1]! };
  }
  throw new Error('the bridge exited before listening');
}

t.test('a write the disk refuses: 500s, the process lives, nothing unacknowledged comes back', async (t) => {
  const te = await makeTestEnv();
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  const env: Record<string, string> = { ...te.env, HARNESS_BRIDGE_PORT: '0' };
  const token = env['HARNESS_BRIDGE_ACCESS_TOKEN']!;
  const { child, url } = await limitedBridge(env);
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const post = async (runId: string, id: string) => {
    const res = await fetch(`${url}/runs/${runId}/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-harness-bridge-token': token },
      body: JSON.stringify(ev({ id, message: `event ${id} ${'x'.repeat(200)}`, nodeId: 'implement' })),
    });
    await res.arrayBuffer();
    return res.status;
  };
  /** Each run's eventCount in a run list answered 200 while the writes were failing. */
  const listed: Record<string, number>[] = [];
  const list = async () => {
    const res = await fetch(`${url}/runs`, { headers: { 'x-harness-bridge-token': token } });
    const body = (await res.json()) as { runs?: { id: string; eventCount: number }[] };
    if (res.status === 200)
      listed.push(Object.fromEntries((body.runs ?? []).map((r) => [r.id, r.eventCount])));
  };
  const status = new Map<string, number>();
  await Promise.all(
    Array.from({ length: 6 }, async (_, w) => {
      for (let n = 0; n < 15; n++) {
        const runId = RUNS[(w + n) % RUNS.length]!;
        const id = `${runId}:w${w}-${n}`;
        // A list read racing each write: it must never count a record its client is told failed.
        const [s] = await Promise.all([post(runId, id), list()]);
        status.set(id, s);
      }
    }),
  );
  const counts = [...status.values()].reduce<Record<number, number>>((c, s) => {
    c[s] = (c[s] ?? 0) + 1;
    return c;
  }, {});
  t.ok(
    (counts[201] ?? 0) > 0 && (counts[500] ?? 0) > 0,
    `some stored, some refused: ${JSON.stringify(counts)}`,
  );
  t.same(Object.keys(counts).sort(), ['201', '500'], 'no other answer, no transport error');
  t.equal(child.exitCode, null, 'the bridge is still running');
  t.equal(child.signalCode, null);
  const after = await fetch(`${url}/runs`, { headers: { 'x-harness-bridge-token': token } });
  t.equal(after.status, 500, 'the run list does not count records the failed log holds');
  child.kill('SIGKILL');
  await once(child, 'exit');

  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  const present = new Set<string>();
  for (const runId of RUNS) {
    // A run whose first event was refused may not exist: one assertion either way, so the
    // suite's count does not depend on where the failure fell.
    const r = await b.req('GET', `/runs/${runId}`);
    t.ok(
      r.status === 404 || r.body['run'].status === 'running',
      `${runId} is absent or not quarantined (${r.status})`,
    );
    if (r.status === 404) continue;
    for (const e of await allEvents(b, runId)) present.add(e.id);
  }
  for (const runId of RUNS) {
    const acked = [...status].filter(([id, s]) => id.startsWith(`${runId}:`) && s === 201).length;
    const most = Math.max(0, ...listed.map((l) => l[runId] ?? 0));
    t.ok(most <= acked, `${runId}: listed at most its ${acked} acknowledged events (${most})`);
  }
  for (const [id, s] of status) {
    if (s === 201) t.ok(present.has(id), `${id}: acknowledged, so present`);
    else t.notOk(present.has(id), `${id}: answered 500, so absent`);
  }
});
