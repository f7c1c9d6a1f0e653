import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { NODE_IDS, type RunEvent } from '../../src/contract/index.js';
import type { BridgeCall } from '../../src/sources/client.js';
import type { ReplayInput } from '../../src/sources/recorded.js';
import { replay } from '../../src/sources/replay.js';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';
import { bridgeClientEnv, expectRefused, runCli } from '../helpers/cli.js';

/**
 * Issue 31 items 3 (JSONL) and 4: `harness replay` and `harness blueprint` produce the replay and
 * blueprint rows of SPEC 9's table, each as a new run; a bad input posts nothing. One bridge for
 * the file; the CLI is the built one (`npm run build`).
 */

t.test('replay and blueprint sources', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const env = bridgeClientEnv(b);
  const run = async (id: string) => (await b.req('GET', `/runs/${id}`)).body['run'];
  const jsonl = async (name: string, events: Record<string, unknown>[]) => {
    const file = join(b.t.dir, name);
    await writeFile(file, `${events.map((e) => JSON.stringify(e)).join('\n')}\n`);
    return file;
  };
  const recorded = [
    ev({ id: 'e1', ts: '2025-01-01T00:00:00.000Z', type: 'agent.connected' }),
    ev({ id: 'e2', ts: '2025-01-01T00:00:01.000Z', type: 'node.entered', nodeId: 'intake' }),
    ev({ id: 'e3', ts: '2025-01-01T00:00:02.000Z', type: 'node.entered', nodeId: 'route' }),
  ];

  t.test('blueprint of the default adapter: every node in lane order', async (t) => {
    const r = await runCli(['blueprint', '--as', 'bp-default'], env);
    t.equal(r.exitCode, 0, r.stderr);
    const view = await run('bp-default');
    t.equal(view.runMode, 'blueprint');
    t.same(
      view.events.map((e: { nodeId: string }) => e.nodeId),
      NODE_IDS,
    );
    for (const e of view.events) {
      t.equal(e.runMode, 'blueprint');
      t.equal(e.eventSource, 'static-blueprint');
      t.equal(e.nodeState, 'pending', 'a blueprint enters nothing');
    }
    t.equal(view.events[0].artifact, 'run/intake.json');

    const unnamed = await runCli(['blueprint'], env);
    t.equal(unnamed.exitCode, 0, unnamed.stderr);
    const { runId } = JSON.parse(unnamed.stdout);
    t.match(runId, /^blueprint-\d{8}T\d{6}Z-[0-9a-f]{6}$/);
    t.equal((await run(runId)).events.length, NODE_IDS.length);
  });

  t.test('blueprint of a narrowed adapter: its required nodes and artifacts only', async (t) => {
    const adapter = join(b.t.repo, 'narrow-adapter.json');
    await writeFile(
      adapter,
      JSON.stringify({
        runtime: { requiredNodes: ['implement', 'intake'], artifactByNode: { intake: 'run/start.json' } },
      }),
    );
    const r = await runCli(['blueprint', '--adapter', adapter, '--as', 'bp-narrow'], env);
    t.equal(r.exitCode, 0, r.stderr);
    const view = await run('bp-narrow');
    t.same(
      view.events.map((e: { nodeId: string }) => e.nodeId),
      ['intake', 'implement', 'prove', 'handoff'],
      'lane order, prove and handoff always required',
    );
    t.same(
      view.events.map((e: { eventSource: string }) => e.eventSource),
      Array(4).fill('static-blueprint'),
    );
    t.equal(view.events[0].artifact, 'run/start.json');
  });

  t.test('a bad adapter exits 2 with one line and posts nothing', async (t) => {
    const bad = join(b.t.repo, 'bad-adapter.json');
    await writeFile(bad, JSON.stringify({ runtime: { requiredNodes: ['nowhere'] } }));
    expectRefused(t, await runCli(['blueprint', '--adapter', bad, '--as', 'bp-bad'], env), 'nowhere');
    t.equal((await b.req('GET', '/runs/bp-bad')).status, 404);
    // Valid, but outside every root the bridge reads adapters from: its policy refuses it.
    const outside = await mkdtemp(join(tmpdir(), 'harness-adapter-'));
    t.teardown(() => rm(outside, { recursive: true, force: true }));
    const file = join(outside, 'project-adapter.json');
    await writeFile(file, '{}');
    expectRefused(
      t,
      await runCli(['blueprint', '--adapter', file, '--as', 'bp-out'], env),
      'adapter_policy_violation',
    );
    t.equal((await b.req('GET', '/runs/bp-out')).status, 404);
  });

  t.test('replay of a JSONL file: a new replay run, every event posted', async (t) => {
    const file = await jsonl('good.jsonl', recorded);
    const first = await runCli(['replay', file], env);
    t.equal(first.exitCode, 0, first.stderr);
    t.equal(JSON.parse(first.stdout).runId, 'good-replay-1');
    const view = await run('good-replay-1');
    t.equal(view.runMode, 'replay');
    t.equal(view.eventCount, 3);
    t.same(
      view.events.map((e: { id: string; eventSource: string; runMode: string }) => [
        e.id,
        e.runMode,
        e.eventSource,
      ]),
      [
        ['e1', 'replay', 'local-jsonl'],
        ['e2', 'replay', 'local-jsonl'],
        ['e3', 'replay', 'local-jsonl'],
      ],
    );
    const again = await runCli(['replay', file], env);
    t.equal(again.exitCode, 0, again.stderr);
    t.equal(JSON.parse(again.stdout).runId, 'good-replay-2', 'a second replay never reuses the first one');
  });

  t.test('a bad line is named with its number and nothing is posted', async (t) => {
    const { status: _dropped, ...noStatus } = recorded[2]!;
    const file = await jsonl('bad.jsonl', [recorded[0]!, recorded[1]!, noStatus]);
    expectRefused(t, await runCli(['replay', file], env), 'line 3');
    t.equal((await b.req('GET', '/runs/bad-replay-1')).status, 404, 'no run was created');
    const notJson = join(b.t.dir, 'broken.jsonl');
    await writeFile(notJson, `${JSON.stringify(recorded[0])}\n{"type":\n`);
    expectRefused(t, await runCli(['replay', notJson, '--as', 'broken-r'], env), 'line 2');
    t.equal((await b.req('GET', '/runs/broken-r')).status, 404);
  });

  t.test("a replay never reuses a live run's id", async (t) => {
    t.equal((await b.req('POST', '/runs/live-1/events', ev())).status, 201);
    const before = await b.journal('live-1');
    const r = await runCli(['replay', await jsonl('live.jsonl', recorded), '--as', 'live-1'], env);
    t.equal(r.exitCode, 1, r.stderr);
    t.match(r.stderr, /live-1 exists already/);
    t.same(await b.journal('live-1'), before, 'the live run is byte-for-byte unchanged');
  });

  t.test('an event the bridge refuses stops the replay at its line, exit 1', async (t) => {
    // Contract-valid, but the root holds no such file: the bridge cannot verify the claim.
    const written = ev({ type: 'artifact.written', nodeId: 'intake', artifact: 'run/intake.json' });
    const file = await jsonl('refused.jsonl', [recorded[0]!, written, recorded[2]!]);
    const r = await runCli(['replay', file, '--artifact-root', b.t.artifactRoot], env);
    t.equal(r.exitCode, 1, r.stderr);
    t.match(r.stderr, /line 2 \(run refused-replay-1\)/);
    t.match(r.stderr, /artifact_verification_failed/);
    t.equal((await run('refused-replay-1')).eventCount, 1, 'the events before it stay posted');
  });

  t.test('--speed divides the recorded gaps', async (t) => {
    // In-process, so the time measured is the replay's alone, not a CLI's start.
    const call: BridgeCall = async (path, init) => {
      const res = await b.req(init.method, path, init.body, init.headers);
      return { status: res.status, body: res.body };
    };
    const input: ReplayInput = {
      source: 'local-jsonl',
      name: 'paced',
      events: [
        ev({ ts: '2025-01-01T00:00:00.000Z' }),
        ev({ ts: '2025-01-01T00:00:03.000Z', nodeId: 'route' }),
      ].map((event, i) => ({ where: `line ${i + 1}`, event: event as RunEvent })),
    };
    const timed = async (speed?: number) => {
      const started = performance.now();
      await replay(call, input, { ...(speed === undefined ? {} : { speed }), humanHeaders: () => ({}) });
      return performance.now() - started;
    };
    const paced = await timed(3);
    t.ok(paced >= 950 && paced < 2500, `a 3 s gap at speed 3 waited about 1 s, not 3 (${paced} ms)`);
    const fast = await timed();
    t.ok(fast < 900, `without --speed there is no waiting (${fast} ms)`);
    expectRefused(t, await runCli(['replay', join(b.t.dir, 'good.jsonl'), '--speed', '0'], env), '--speed');
  });
});
