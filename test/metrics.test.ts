import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { RunQueue } from '../src/server/run-queue.js';
import { cleanup, ev, startTestBridge, type TestBridge } from './helpers/bridge.js';
import { complete, driveToReady } from './helpers/complete-run.js';
import { expectRejected } from './helpers/expect.js';
import { passingAssessment, passingProof } from './helpers/finish-line-fixture.js';

/**
 * Issue 34: GET /metrics in the Prometheus text format, behind the access token, and every metric
 * docs/operations.md "Metrics" names exists and moves when its cause happens.
 */

async function scrape(b: TestBridge): Promise<string> {
  const res = await fetch(`${b.url}/metrics`, {
    headers: { 'x-harness-bridge-token': b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']! },
  });
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  return res.text();
}

/** The value of one sample (`name{labels} value`), 0 when the series has no sample yet. */
function sample(text: string, name: string, labels = ''): number {
  const want = labels === '' ? name : `${name}{${labels}}`;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    if (line.slice(0, at) === want) return Number(line.slice(at + 1));
  }
  return 0;
}

/** The metric names the operations guide's table lists (its first column). */
async function documentedMetrics(): Promise<string[]> {
  const doc = await readFile(join(import.meta.dirname, '../../docs/operations.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Metrics'));
  const table = section.slice(0, section.indexOf('\n## ') === -1 ? undefined : section.indexOf('\n## '));
  return [...table.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]!);
}

t.test('every documented metric is exposed, in the text format, with the process metrics', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const res = await fetch(`${b.url}/metrics`, {
    headers: { 'x-harness-bridge-token': b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']! },
  });
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  const names = await documentedMetrics();
  t.ok(names.length >= 15, `the guide lists the metrics: ${names.join(', ')}`);
  for (const name of names) t.match(text, new RegExp(`^# TYPE ${name} `, 'm'), `${name} is exposed`);
  t.match(text, /^process_cpu_user_seconds_total \d/m, 'process metrics');
  t.match(text, /^nodejs_eventloop_lag_seconds \d/m, 'Node metrics');
});

t.test('the example Grafana dashboard queries only metrics the bridge exposes', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const text = await scrape(b);
  const dashboard = JSON.parse(
    await readFile(join(import.meta.dirname, '../../docs/grafana/harness-bridge.json'), 'utf8'),
  ) as { panels: { title: string; targets: { expr: string }[] }[] };
  const names = new Set<string>();
  for (const panel of dashboard.panels)
    for (const { expr } of panel.targets)
      for (const [name] of expr.matchAll(/\b(?:bridge|process|nodejs)_[a-z0-9_]+/g))
        names.add(name.replace(/_(bucket|sum|count)$/, ''));
  t.ok(names.size >= 15, `the dashboard reads the bridge's metrics: ${[...names].join(', ')}`);
  for (const name of names) t.match(text, new RegExp(`^# TYPE ${name} `, 'm'), `${name} is exposed`);
});

t.test('/health reports the configured pool size and validator concurrency beside their use', async (t) => {
  const b = await startTestBridge(undefined, {});
  t.teardown(() => cleanup(b));
  const health = await b.req('GET', '/health');
  t.equal(health.status, 200);
  t.match(health.body['workers'], { configured: 1, busy: 0, threads: Number, queued: 0 });
  t.same(health.body['validators'], { concurrency: b.ctx.env.validatorConcurrency, running: 0 });
  t.equal(health.body['limits']['validatorConcurrency'], b.ctx.env.validatorConcurrency, 'kept where it was');
  const tokenless = await b.req('GET', '/health', undefined, {}, null);
  t.notOk('workers' in tokenless.body || 'validators' in tokenless.body, 'not without the token');
});

t.test(
  '/metrics without the token, or with a wrong one: 401 bridge_auth_required, nothing stored',
  async (t) => {
    const b = await startTestBridge();
    t.teardown(() => cleanup(b));
    t.equal((await b.req('POST', '/runs/m1/events', ev({ id: 'e1' }))).status, 201);
    for (const token of [null, 'x'.repeat(43)]) {
      await expectRejected(
        t,
        b,
        'm1',
        () => b.req('GET', '/metrics', undefined, {}, token),
        401,
        'bridge_auth_required',
      );
    }
    await expectRejected(t, b, 'm1', () => b.req('GET', '/metrics?x=1'), 400, 'invalid_query');
  },
);

t.test('accepted, duplicate and refused events, durable time, batches and busy queues move', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const before = await scrape(b);
  t.equal(sample(before, 'bridge_events_accepted_total', 'outcome="appended"'), 0);
  t.equal((await b.req('POST', '/runs/m2/events', ev({ id: 'a1' }))).status, 201);
  t.equal((await b.req('POST', '/runs/m2/events', ev({ id: 'a2' }))).status, 201);
  t.equal((await b.req('POST', '/runs/m2/events', ev({ id: 'a1' }))).status, 200);
  await expectRejected(
    t,
    b,
    'm2',
    () => b.req('POST', '/runs/m2/events', ev({ id: 'a3', type: 'nope' })),
    400,
    'event_contract_violation',
  );
  await expectRejected(
    t,
    b,
    'm2',
    () => b.req('POST', '/runs/m2/events', ev({ id: 'a4' }), {}, null),
    401,
    'bridge_auth_required',
  );
  // A refusal on another route is not an event refusal.
  await expectRejected(
    t,
    b,
    'm3',
    () => b.req('POST', '/runs', { id: 'm3', status: 'x' }),
    400,
    'run_creation_contract_violation',
  );
  let text = await scrape(b);
  t.equal(sample(text, 'bridge_events_accepted_total', 'outcome="appended"'), 2);
  t.equal(sample(text, 'bridge_events_accepted_total', 'outcome="duplicate"'), 1);
  t.equal(sample(text, 'bridge_events_refused_total', 'code="event_contract_violation"'), 1);
  t.equal(sample(text, 'bridge_events_refused_total', 'code="bridge_auth_required"'), 1);
  t.equal(sample(text, 'bridge_events_refused_total', 'code="run_creation_contract_violation"'), 0);
  t.equal(sample(text, 'bridge_event_durable_seconds_count'), 3, 'one durable answer per 2xx');
  t.ok(sample(text, 'bridge_event_durable_seconds_sum') > 0);
  t.equal(sample(text, 'bridge_commit_batch_records_sum'), 2, 'two records reached the commit log');
  t.ok(sample(text, 'bridge_commit_batch_records_count') >= 1);
  t.equal(sample(text, 'bridge_queue_depth'), 0);

  // A queue of one slot per run, held by an operation the test controls (run-limits.test.ts).
  b.ctx.queue = new RunQueue(1, 100);
  let release!: () => void;
  const held = b.ctx.queue.run('m2', () => new Promise<void>((r) => (release = r)));
  text = await scrape(b);
  t.equal(sample(text, 'bridge_queue_depth'), 1, 'the held operation is queued');
  t.equal(sample(text, 'bridge_run_queue_depth_max'), 1);
  await expectRejected(
    t,
    b,
    'm2',
    () => b.req('POST', '/runs/m2/events', ev({ id: 'a5' })),
    503,
    'bridge_busy',
  );
  t.equal((await b.req('GET', '/runs/m2')).status, 503, 'a read waits in the same queue');
  release();
  await held;
  text = await scrape(b);
  t.equal(sample(text, 'bridge_busy_total'), 2, 'both busy answers, the read too');
  t.equal(sample(text, 'bridge_events_refused_total', 'code="bridge_busy"'), 1, 'one of them an event');
  t.equal(sample(text, 'bridge_queue_depth'), 0);
});

t.test(
  'validator children, hash pool tasks, cache misses and hits, and a drift quarantine move',
  async (t) => {
    const b = await startTestBridge(undefined, { realGate: true });
    t.teardown(() => cleanup(b));
    const at = new Date().toISOString();
    await driveToReady(b, 'r1', {
      'proof/proof.json': JSON.stringify(passingProof('r1', at)),
      'production/layer-assessment.json': JSON.stringify(passingAssessment('r1', at)),
    });
    const done = await complete(b, 'r1');
    t.equal(done.status, 201, JSON.stringify(done.body).slice(0, 300));
    let text = await scrape(b);
    t.ok(sample(text, 'bridge_validator_seconds_count') >= 1, 'the completion ran a validator child');
    t.equal(sample(text, 'bridge_validator_children_running'), 0, 'and it has exited');
    t.equal(sample(text, 'bridge_validator_deadline_hits_total'), 0);
    t.ok(sample(text, 'bridge_hash_pool_task_seconds_count') >= 1, 'the completion used the hash pool');
    t.equal(sample(text, 'bridge_completed_run_reads_total', 'cache="miss"'), 0);
    t.equal((await b.req('GET', '/runs/r1')).body['run']?.status, 'completed');
    t.equal((await b.req('GET', '/runs/r1')).body['run']?.status, 'completed');
    text = await scrape(b);
    t.equal(
      sample(text, 'bridge_completed_run_reads_total', 'cache="miss"'),
      1,
      'the first read ran the validators',
    );
    t.equal(
      sample(text, 'bridge_completed_run_reads_total', 'cache="hit"'),
      1,
      'the second took the cached verdict',
    );
    const health = await b.req('GET', '/health');
    t.same(health.body['cache'], { executions: 1, hits: 1 }, 'health agrees');
    t.equal(sample(text, 'bridge_quarantines_total', 'reason="drift"'), 0);
    await writeFile(join(b.t.artifactRoot, 'handoff/final.md'), 'edited after completion\n');
    t.equal((await b.req('GET', '/runs/r1')).body['run']?.status, 'quarantined');
    t.equal((await b.req('GET', '/runs/r1')).body['run']?.status, 'quarantined');
    text = await scrape(b);
    t.equal(sample(text, 'bridge_quarantines_total', 'reason="drift"'), 1, 'one run, counted once');
    t.equal(sample(text, 'bridge_hash_pool_threads_busy'), 0);
    t.equal(sample(text, 'bridge_hash_pool_queued_tasks'), 0);
  },
);

t.test('a validator child killed at its deadline refuses the completion and is counted', async (t) => {
  const { createFinishLineGate } = await import('../src/validators/runner.js');
  const b = await startTestBridge(undefined, {
    // The gate as `harness bridge` wires it, with a deadline no child process can meet.
    makeFinishLine: (e, observer) =>
      createFinishLineGate({
        concurrency: e.validatorConcurrency,
        deadlineMs: 1,
        ...(observer ? { observer } : {}),
      }),
  });
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'd1');
  let text = await scrape(b);
  t.equal(sample(text, 'bridge_validator_deadline_hits_total'), 0);
  const refused = await complete(b, 'd1');
  t.equal(refused.status, 409);
  t.ok(
    (refused.body['problems'] as string[]).includes('finish-line validators timed out'),
    JSON.stringify(refused.body['problems']),
  );
  text = await scrape(b);
  t.equal(sample(text, 'bridge_validator_deadline_hits_total'), 1, 'the kill is counted');
  t.equal(sample(text, 'bridge_validator_seconds_count'), 1, 'and timed like any child');
  t.equal(sample(text, 'bridge_validator_children_running'), 0, 'the child is gone');
  t.equal((await b.req('GET', '/runs/d1')).body['run']?.status, 'blocked');
});
