import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import t, { type Test } from 'tap';
import { cleanup, ev, makeTestEnv, startTestBridge, type TestEnv } from '../helpers/bridge.js';
import { allEvents } from '../helpers/expect.js';
import { CLI } from '../helpers/paths.js';
import { clusterOrSkip } from '../helpers/pg-store.js';

/**
 * CONTRACT 7: a 2xx for an event means its record is on disk. A real bridge process (the built
 * CLI) is SIGKILLed in the middle of concurrent writes to several runs; after a restart on the same
 * data directory every acknowledged event id must be present, and no run may be quarantined (a
 * torn tail is truncated, never mistaken for tampering). Needs `npm run build`.
 */
const RUNS = Array.from({ length: 6 }, (_, i) => `k9-${i}`);
const WORKERS = 24;

async function spawnBridge(env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [CLI, 'bridge'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! });
  for await (const line of lines) {
    const m = /^Server listening at (http:\/\/\S+)$/.exec(line);
    if (m) return { child, url: m[1]! };
  }
  throw new Error('the bridge exited before listening');
}

/** Posts until stopped; records the id of every event answered 2xx. */
async function load(url: string, token: string, acked: Set<string>, round: number, stop: () => boolean) {
  let n = 0;
  const worker = async (w: number) => {
    while (!stop()) {
      const runId = RUNS[(w + n) % RUNS.length]!;
      const id = `r${round}-w${w}-${n++}`;
      try {
        const res = await fetch(`${url}/runs/${runId}/events`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-harness-bridge-token': token },
          body: JSON.stringify(ev({ id, message: `event ${id}`, nodeId: 'implement' })),
        });
        await res.arrayBuffer();
        if (res.status >= 200 && res.status < 300) acked.add(id);
        else if (res.status !== 503) throw new Error(`unexpected ${res.status}`);
      } catch (err) {
        if (stop()) return; // the process is gone: in-flight requests were never acknowledged
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
}

/** Kills a bridge on `te`'s store twice mid-load, then checks every acknowledged event is there. */
async function killedUnderLoad(t: Test, te: TestEnv): Promise<void> {
  const env: Record<string, string> = { ...te.env, HARNESS_BRIDGE_PORT: '0' };
  const token = env['HARNESS_BRIDGE_ACCESS_TOKEN']!;
  const acked = new Set<string>();

  for (let round = 0; round < 2; round++) {
    const { child, url } = await spawnBridge(env);
    const exited = once(child, 'exit');
    t.teardown(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    let killed = false;
    const target = acked.size + 300;
    const killer = (async () => {
      while (acked.size < target) await new Promise((r) => setImmediate(r));
      killed = true;
      child.kill('SIGKILL');
    })();
    await Promise.all([load(url, token, acked, round, () => killed), killer]);
    const [, signal] = await exited;
    t.equal(signal, 'SIGKILL', `round ${round}: killed mid-load with ${acked.size} acknowledged`);
  }

  // Restart on the same data directory (in-process, so reads go through the same checks).
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  const present = new Set<string>();
  for (const runId of RUNS) {
    const view = await b.req('GET', `/runs/${runId}`);
    t.equal(view.body['run'].status, 'running', `${runId} is not quarantined`);
    const events = await allEvents(b, runId);
    t.equal(events.length, view.body['run'].eventCount);
    t.same(
      events.map((e) => e.seq),
      events.map((_, i) => i),
      `${runId}: a gap-free journal`,
    );
    for (const e of events) present.add(e.id);
  }
  const missing = [...acked].filter((id) => !present.has(id));
  t.same(missing, [], `all ${acked.size} acknowledged events are present`);
  t.ok(present.size >= acked.size);
  t.equal((await b.req('POST', `/runs/${RUNS[0]}/events`, ev())).status, 201, 'the runs accept new events');
}

t.test('every acknowledged event survives SIGKILL under concurrent load', async (t) =>
  killedUnderLoad(t, await makeTestEnv()),
);

// Issue 32: the same against the PostgreSQL store (a 2xx only once the batch's transaction has
// committed), killed in the middle of its batches.
const cluster = await clusterOrSkip('SIGKILL under load, PostgreSQL store');
if (cluster !== null) {
  t.test('PostgreSQL store: every acknowledged event survives SIGKILL under concurrent load', async (t) =>
    killedUnderLoad(t, await makeTestEnv({ database: cluster.url })),
  );
}
