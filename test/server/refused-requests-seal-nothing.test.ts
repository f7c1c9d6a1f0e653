import { Buffer } from 'node:buffer';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { EVENT_MAX_BYTES, TEXT_FIELD_MAX } from '../../src/contract/index.js';
import { cleanup, ev, startTestBridge, type TestBridge } from '../helpers/bridge.js';
import { expectRejected, type Res, records, writeArtifact } from '../helpers/expect.js';

/**
 * SECURITY.md "Nothing of a refused request is stored", for the write-once root and adapter. While
 * a run has no events, a POST /runs repeat or the first event may still add the artifact root or
 * the adapter; a request refused for any other reason (a differing field, the event's mode,
 * approval, artifact or size) must not seal what it carried, or the corrected retry would be
 * refused as "differs from the sealed value". Each refusal here leaves run-config.json and the
 * journal byte-for-byte as they were, and the corrected retry succeeds.
 */
const configOf = (b: TestBridge, runId: string) => b.config(runId);

/** expectRejected, also proving run-config.json is unchanged. */
async function refusedSealsNothing(
  t: Test,
  b: TestBridge,
  runId: string,
  send: () => Promise<Res>,
  status: number,
  code: string,
): Promise<void> {
  const config = await configOf(b, runId);
  await expectRejected(t, b, runId, send, status, code);
  t.ok((await configOf(b, runId)).equals(config), 'run-config.json bytes unchanged');
  const view = (await b.req('GET', `/runs/${runId}`)).body['run'];
  t.equal(view.artifactRootSet, config.includes('"artifactRoot":"'), 'the view shows the same root state');
}

t.test('refused requests seal neither root nor adapter', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const right = b.t.artifactRoot;
  const wrong = join(b.t.dir, 'wrong-root');
  await mkdir(wrong);
  await writeArtifact(right, 'run/intake.json');
  const adapter = join(b.t.repo, 'adapter.json');
  await writeFile(adapter, JSON.stringify({ runtime: { requiredNodes: ['intake'] } }));
  const intake = (over: Record<string, unknown>) =>
    ev({ type: 'artifact.written', nodeId: 'intake', artifact: 'run/intake.json', ...over });

  t.test('POST /runs refused with run_already_exists', async (t) => {
    t.equal((await b.req('POST', '/runs', { id: 'a', title: 'one' })).status, 201);
    const post = (body: Record<string, unknown>) => () => b.req('POST', '/runs', { id: 'a', ...body });
    await refusedSealsNothing(
      t,
      b,
      'a',
      post({ title: 'two', artifactRoot: wrong }),
      409,
      'run_already_exists',
    );
    await refusedSealsNothing(
      t,
      b,
      'a',
      post({ task: 'x', adapterPath: adapter }),
      409,
      'run_already_exists',
    );
    await refusedSealsNothing(
      t,
      b,
      'a',
      post({ runMode: 'replay', artifactRoot: wrong }),
      409,
      'run_already_exists',
    );
    const retry = await b.req('POST', '/runs', {
      id: 'a',
      title: 'one',
      artifactRoot: right,
      adapterPath: adapter,
    });
    t.equal(retry.status, 200, JSON.stringify(retry.body));
    t.equal(retry.body['run'].artifactRootSet, true, 'the corrected repeat seals the root');
    t.equal(retry.body['run'].adapter.rootKind, 'repo-root', 'and the adapter');
    t.equal((await b.req('POST', '/runs/a/events', intake({ artifactRoot: right }))).status, 201);
  });

  t.test('a first event refused after its root/adapter were compared', async (t) => {
    t.equal((await b.req('POST', '/runs', { id: 'b', runMode: 'live' })).status, 201);
    const post = (body: Record<string, unknown>) => () => b.req('POST', '/runs/b/events', body);
    // The artifact is not under the root the event names.
    await refusedSealsNothing(
      t,
      b,
      'b',
      post(intake({ artifactRoot: wrong, adapterPath: adapter })),
      400,
      'artifact_verification_failed',
    );
    // Another mode than the run's.
    await refusedSealsNothing(
      t,
      b,
      'b',
      post(ev({ runMode: 'replay', eventSource: 'local-jsonl', artifactRoot: wrong })),
      409,
      'event_state_violation',
    );
    // A decision with no pending approval.
    await refusedSealsNothing(
      t,
      b,
      'b',
      () =>
        b.req(
          'POST',
          '/runs/b/events',
          ev({
            type: 'approval.granted',
            actor: 'human',
            approvalOwner: 'o',
            approvalScope: 's',
            artifactRoot: wrong,
          }),
          { 'x-harness-human-token': b.t.env['HARNESS_HUMAN_APPROVAL_TOKEN']! },
        ),
      409,
      'event_state_violation',
    );
    // Too large once stored (id and ts filled in), though its body is under the limit.
    const big = ev({ artifactRoot: wrong });
    const stored = () =>
      Buffer.byteLength(
        JSON.stringify({
          id: '00000000-0000-0000-0000-000000000000',
          ts: '2026-01-01T00:00:00.000Z',
          ...big,
        }),
      );
    const pads = ['skipReason', 'failureReason', 'recoveryPath', 'approvalOwner'];
    for (const f of pads) big[f] = '';
    for (const f of pads) big[f] = 'a'.repeat(Math.min(TEXT_FIELD_MAX, EVENT_MAX_BYTES + 1 - stored()));
    t.equal(stored(), EVENT_MAX_BYTES + 1, 'one byte over once stored');
    t.ok(Buffer.byteLength(JSON.stringify(big)) <= EVENT_MAX_BYTES, 'the body is under the body limit');
    await refusedSealsNothing(t, b, 'b', post(big), 413, 'payload_too_large');

    const corrected = await b.req(
      'POST',
      '/runs/b/events',
      intake({ artifactRoot: right, adapterPath: adapter }),
    );
    t.equal(corrected.status, 201, `the corrected retry is accepted: ${JSON.stringify(corrected.body)}`);
    const view = (await b.req('GET', '/runs/b')).body['run'];
    t.equal(view.artifactRootSet, true);
    t.equal(view.adapter.rootKind, 'repo-root');
    t.equal(records(await b.journal('b')).length, 1);
  });

  t.test('a first event is judged under the adapter it adds', async (t) => {
    const custom = join(b.t.repo, 'custom-adapter.json');
    await writeFile(
      custom,
      JSON.stringify({ runtime: { artifactByNode: { intake: 'custom/intake.json' } } }),
    );
    await writeArtifact(right, 'custom/intake.json');
    t.equal((await b.req('POST', '/runs', { id: 'd', artifactRoot: right })).status, 201);
    // The default path is not this run's once the adapter is sealed: refused, and nothing sealed.
    await refusedSealsNothing(
      t,
      b,
      'd',
      () => b.req('POST', '/runs/d/events', intake({ adapterPath: custom })),
      400,
      'artifact_verification_failed',
    );
    const first = await b.req(
      'POST',
      '/runs/d/events',
      intake({ artifact: 'custom/intake.json', adapterPath: custom }),
    );
    t.equal(first.status, 201, JSON.stringify(first.body));
    const node = (await b.req('GET', '/runs/d')).body['run'].nodes.find((n: any) => n.id === 'intake');
    t.same([node.artifact, node.artifactVerified], ['custom/intake.json', true]);
  });

  t.test('an accepted first event seals its root before its record is appended', async (t) => {
    t.equal((await b.req('POST', '/runs', { id: 'c' })).status, 201);
    const config = await configOf(b, 'c');
    // The record is queued (and the answer sent) only after the config write returned.
    const sealConfig = b.ctx.store.sealConfig.bind(b.ctx.store);
    let journalAtSeal: number | null = null;
    b.ctx.store.sealConfig = async (run, next) => {
      journalAtSeal = run.journal.count;
      await sealConfig(run, next);
    };
    t.teardown(() => {
      b.ctx.store.sealConfig = sealConfig;
    });
    t.equal((await b.req('POST', '/runs/c/events', intake({ artifactRoot: right }))).status, 201);
    t.equal(journalAtSeal, 0, 'sealed while the journal was empty');
    t.notOk((await configOf(b, 'c')).equals(config), 'run-config.json now holds the root');
    t.equal((await b.req('GET', '/runs/c')).body['run'].artifactRootSet, true);
  });

  t.test('a refused first completion seals what it adds, as its run.blocked is stored', async (t) => {
    t.equal((await b.req('POST', '/runs', { id: 'e' })).status, 201);
    const completion = ev({
      type: 'run.completed',
      nodeId: 'handoff',
      status: 'passed',
      artifactRoot: right,
      adapterPath: adapter,
    });
    const r = await b.req('POST', '/runs/e/events', completion);
    t.equal(r.body['error'], 'finish_line_blocked', JSON.stringify(r.body));
    // Judged under the adapter it adds: only intake (and the always-required nodes) are required.
    t.ok(
      r.body['problems'].some((p: string) => p.includes('intake')),
      'the adapter keeps intake required',
    );
    t.notOk(
      r.body['problems'].some((p: string) => p.includes('route')),
      'the adapter drops route',
    );
    t.same(
      records(await b.journal('e')).map((rec) => rec.event.type),
      ['run.blocked'],
    );
    const view = (await b.req('GET', '/runs/e')).body['run'];
    t.equal(view.artifactRootSet, true, 'the root is sealed with the run.blocked');
    t.equal(view.adapter?.rootKind, 'repo-root');
    t.equal((await b.req('POST', '/runs/e/events', intake({ artifactRoot: right }))).status, 201);
  });
});
