import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import t, { type Test } from 'tap';
import { EXIT_IO_FAILED } from '../../src/cli/bridge.js';
import { LEASE_FILE } from '../../src/storage/paths.js';
import { cleanup, ev, makeTestEnv, startTestBridge, type TestEnv } from '../helpers/bridge.js';
import { allEvents, within } from '../helpers/expect.js';
import { CLI } from '../helpers/paths.js';
import { spawnBridge } from '../helpers/spawned-bridge.js';

/**
 * CONTRACT 7 when the disk refuses a write: a real bridge process whose commit-log write fails
 * stops admitting work (503 bridge_busy), answers what it admitted (a record its batch could not
 * make durable is refused, never acknowledged), releases its lease, writes one line naming the
 * cause and exits EXIT_IO_FAILED, so that a supervisor restarts it. The restart replays the log:
 * every event answered 2xx is served, and no event answered 503 is (a batch write that failed
 * partway is cut back, so its records, whole or not, are not replayed). Needs `npm run build`.
 */

/** An event's answer: its HTTP status and error code, or status 0 when the bridge had gone. */
interface Answer {
  status: number;
  error?: string;
}

async function post(url: string, token: string, runId: string, id: string, pad = 0): Promise<Answer> {
  try {
    const res = await fetch(`${url}/runs/${runId}/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-harness-bridge-token': token },
      body: JSON.stringify(ev({ id, message: `event ${id} ${'x'.repeat(pad)}`, nodeId: 'implement' })),
    });
    const body = (await res.json()) as { error?: string };
    return res.status < 300 ? { status: res.status } : { status: res.status, error: body.error ?? '' };
  } catch {
    // The connection was refused or cut: the bridge stopped before answering.
    return { status: 0 };
  }
}

/** The child's exit code, or null if it is still running after 15 s (it should have exited). */
const exitCode = (exited: Promise<unknown[]>): Promise<number | null> =>
  within(15_000, exited).then(
    ([code]) => code as number | null,
    () => null,
  );

const tally = (answers: Map<string, Answer>) =>
  [...answers.values()].reduce<Record<string, number>>((c, a) => {
    const key = a.status === 0 ? 'no answer' : `${a.status} ${a.error ?? ''}`.trim();
    c[key] = (c[key] ?? 0) + 1;
    return c;
  }, {});

/** How the stopped bridge left: its exit code, its one cause line, and a free lease. */
/** What the failure left undurable was refused 503 bridge_busy, as at shutdown; nothing answered 500. */
function refusedAsAtShutdown(t: Test, counts: Record<string, number>): void {
  t.ok((counts['503 bridge_busy'] ?? 0) > 0, 'what could not be made durable was refused, 503 bridge_busy');
  t.same(
    Object.keys(counts).filter((k) => !['201', '503 bridge_busy', 'no answer'].includes(k)),
    [],
    'no other answer (no 500)',
  );
}

function assertStopped(t: Test, te: TestEnv, code: number | null, stderr: string, cause: RegExp): void {
  t.equal(code, EXIT_IO_FAILED, `exit code ${EXIT_IO_FAILED}`);
  const lines = stderr.split('\n').filter(Boolean);
  const named = lines.filter((l) => cause.test(l));
  t.equal(named.length, 1, `one line names the cause: ${JSON.stringify(lines)}`);
  t.equal(lines.at(-1), named[0], 'and it is the last');
  t.notOk(existsSync(join(te.dataDir, LEASE_FILE)), 'the lease is released');
}

/** A bridge restarted on the data directory serves every acknowledged event and no refused one. */
async function restartServes(t: Test, te: TestEnv, runs: string[], answers: Map<string, Answer>) {
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  const present = new Set<string>();
  for (const runId of runs) {
    // A run whose first event was refused may not exist.
    const r = await b.req('GET', `/runs/${runId}`);
    if (r.status === 404) continue;
    t.equal(r.body['run'].status, 'running', `${runId} is not quarantined`);
    const events = await allEvents(b, runId);
    t.same(
      events.map((e) => e['seq']),
      events.map((_, i) => i),
      `${runId}: a gap-free journal of ${events.length} events`,
    );
    for (const e of events) present.add(e['id']);
  }
  const acked = [...answers].filter(([, a]) => a.status >= 200 && a.status < 300).map(([id]) => id);
  t.same(
    acked.filter((id) => !present.has(id)),
    [],
    `all ${acked.length} acknowledged events are served`,
  );
  // An event that got no answer may or may not have been stored; one refused must not have been.
  t.same(
    [...answers].filter(([id, a]) => a.status === 503 && present.has(id)).map(([id]) => id),
    [],
    'no event answered 503 was stored',
  );
}

t.test(
  'a write past the file-size limit: the bridge exits, its restart serves what it acknowledged',
  async (t) => {
    const RUNS = ['wf-0', 'wf-1', 'wf-2'];
    const te = await makeTestEnv();
    t.teardown(() => rm(te.dir, { recursive: true, force: true }));
    const token = te.env['HARNESS_BRIDGE_ACCESS_TOKEN']!;
    // dash counts -f in 512-byte blocks: the data directory's files stop at 10 KiB, and a write past
    // that fails partway with EFBIG (SIGXFSZ is ignored), the way a full disk fails it.
    const child: ChildProcess = spawn(
      '/bin/sh',
      ['-c', 'ulimit -f 20 && exec "$0" "$@"', process.execPath, CLI, 'bridge'],
      { env: te.env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const exited = once(child, 'exit');
    t.teardown(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    let url = '';
    for await (const line of createInterface({ input: child.stdout! })) {
      const m = /^Server listening at (http:\/\/\S+)$/.exec(line);
      if (m) {
        url = m[1]!;
        break;
      }
    }
    t.ok(url, 'the bridge listens');
    const answers = new Map<string, Answer>();
    /** Each run's eventCount in a run list answered 200. */
    const listed: Record<string, number>[] = [];
    const list = async () => {
      const res = await fetch(`${url}/runs`, { headers: { 'x-harness-bridge-token': token } }).catch(
        () => null,
      );
      const body = (await res?.json()) as { runs?: { id: string; eventCount: number }[] } | undefined;
      if (res?.status === 200)
        listed.push(Object.fromEntries((body?.runs ?? []).map((r) => [r.id, r.eventCount])));
    };
    await Promise.all(
      Array.from({ length: 6 }, async (_, w) => {
        for (let n = 0; n < 15; n++) {
          const runId = RUNS[(w + n) % RUNS.length]!;
          const id = `${runId}:w${w}-${n}`;
          // A list read racing each write: it must never count a record its client was not told is stored.
          const [a] = await Promise.all([post(url, token, runId, id, 200), list()]);
          answers.set(id, a);
          if (a.status === 0) return;
        }
      }),
    );
    for (const runId of RUNS) {
      const acked = [...answers].filter(([id, a]) => id.startsWith(`${runId}:`) && a.status === 201).length;
      const most = Math.max(0, ...listed.map((l) => l[runId] ?? 0));
      t.ok(most <= acked, `${runId}: listed at most its ${acked} acknowledged events (${most})`);
    }
    const counts = tally(answers);
    t.ok((counts['201'] ?? 0) > 0, `some stored: ${JSON.stringify(counts)}`);
    refusedAsAtShutdown(t, counts);
    assertStopped(
      t,
      te,
      await exitCode(exited),
      stderr,
      /^harness bridge: storage failed: writing \S+: EFBIG: file too large, write; exiting so a supervisor restarts it$/,
    );
    await restartServes(t, te, RUNS, answers);
  },
);

t.test('the disk fails under load: the bridge exits, its restart serves what it acknowledged', async (t) => {
  const RUNS = ['ld-0', 'ld-1', 'ld-2', 'ld-3'];
  const te = await makeTestEnv();
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  const token = te.env['HARNESS_BRIDGE_ACCESS_TOKEN']!;
  const faults = pathToFileURL(join(import.meta.dirname, '../helpers/bridge-faults.js')).href;
  const bridge = await spawnBridge(
    t,
    { ...te, env: { ...te.env, TEST_FAULT: 'storage' } },
    {
      node: ['--import', faults],
    },
  );
  const exited = once(bridge.child, 'exit');
  const answers = new Map<string, Answer>();
  let acked = 0;
  let failedAt = 0;
  await Promise.all(
    Array.from({ length: 8 }, async (_, w) => {
      // Until the bridge is gone (or, should it not stop, for 3 s after the disk failed).
      for (let n = 0; failedAt === 0 || Date.now() < failedAt + 3000; n++) {
        const runId = RUNS[(w + n) % RUNS.length]!;
        const id = `${runId}:w${w}-${n}`;
        const a = await post(bridge.url, token, runId, id);
        answers.set(id, a);
        if (a.status === 0) return;
        // The disk fails from the commit log's next write on (test/helpers/bridge-faults.ts).
        if (a.status === 201 && ++acked === 200) {
          failedAt = Date.now();
          bridge.child.kill('SIGUSR2');
        }
      }
    }),
  );
  const counts = tally(answers);
  t.ok(failedAt > 0, `the disk failed after ${acked} acknowledged events: ${JSON.stringify(counts)}`);
  refusedAsAtShutdown(t, counts);
  assertStopped(
    t,
    te,
    await exitCode(exited),
    bridge.stderr(),
    /^harness bridge: storage failed: writing \S+\/commit\.log: EIO: i\/o error, write; exiting so a supervisor restarts it$/,
  );
  await restartServes(t, te, RUNS, answers);
});
