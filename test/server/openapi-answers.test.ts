import { generateKeyPairSync } from 'node:crypto';
import { mkdir, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { ERROR_CODES, type ErrorCode } from '../../src/contract/index.js';
import { cleanup, ev, makeTestEnv, startTestBridge, type TestBridge } from '../helpers/bridge.js';
import { complete, driveToReady } from '../helpers/complete-run.js';
import { appendedRecords, assertEnvelope, raw, storedRun } from '../helpers/expect.js';
import { headerRecord, OpenApiAnswers } from '../helpers/openapi-answers.js';
import { startWithQuarantinedRun } from '../helpers/quarantine.js';

/**
 * docs/openapi.json is what clients are generated from: every answer it documents, 2xx and error
 * alike, is driven here against a real bridge, and every answer is held to the document (status,
 * media type, body, headers). So an error the service gives that the document lacks fails here,
 * and so does a documented one no request here can produce. A refusal also leaves the run's
 * journal and files as they were (a refused completion adds exactly its run.blocked record).
 */
const answers = new OpenApiAnswers();
const given = new Set<string>();

type Reply = { status: number; body: Record<string, any>; headers: Headers | Record<string, unknown> };
interface Expect {
  op: string;
  /** The run whose journal and files must not change (refusals only). */
  run: string;
  /** Records the answer appends to that run's journal (a refused completion: its run.blocked). */
  appends?: number;
}

async function expectAnswer(
  t: Test,
  b: TestBridge,
  { op, run, appends = 0 }: Expect,
  expected: ErrorCode | 200 | 201,
  send: () => Promise<Reply>,
): Promise<Reply> {
  const journal = await b.journal(run);
  const stored = await storedRun(b, run);
  const res = await send();
  const status = typeof expected === 'number' ? expected : ERROR_CODES[expected].status;
  t.equal(res.status, status, `${op} -> ${expected}: ${JSON.stringify(res.body).slice(0, 300)}`);
  given.add(answers.check(t, op, { status: res.status, headers: headerRecord(res.headers), body: res.body }));
  if (typeof expected === 'number') return res;
  assertEnvelope(t, res.body, expected);
  const after = await b.journal(run);
  if (appends > 0) {
    t.equal(appendedRecords(t, journal, after).length, appends, `${appends} record(s) appended`);
  } else {
    t.ok(after.equals(journal), `${run}: journal bytes unchanged`);
    t.same(await storedRun(b, run), stored, `${run}: run files unchanged`);
  }
  return res;
}

/** The seven operations, each with a request that would succeed but for what a case changes. */
function operations(b: TestBridge) {
  const op = (name: string, method: string, path: string, body?: unknown) => ({ name, method, path, body });
  return [
    op('GET /health', 'GET', '/health'),
    op('GET /metrics', 'GET', '/metrics'),
    op('GET /runs', 'GET', '/runs'),
    op('GET /runs/{id}', 'GET', '/runs/open'),
    op('GET /runs/{id}/export', 'GET', '/runs/open/export'),
    op('POST /runs', 'POST', '/runs', { id: 'open' }),
    op('POST /runs/{id}/events', 'POST', '/runs/open/events', ev({ id: 'guarded' })),
  ].map((o) => ({
    ...o,
    send: (headers: Record<string, string>, token: string | null = b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!) =>
      raw(b.url, {
        method: o.method,
        path: o.path,
        headers: {
          ...(token === null ? {} : { 'x-harness-bridge-token': token }),
          ...(o.body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        ...(o.body === undefined ? {} : { body: JSON.stringify(o.body) }),
      }),
  }));
}

/** A test environment whose bridge holds an export key, so it serves GET /runs/{id}/export. */
async function keyedEnv() {
  const te = await makeTestEnv();
  te.env['HARNESS_BRIDGE_EXPORT_KEY'] = generateKeyPairSync('ed25519')
    .privateKey.export({ type: 'pkcs8', format: 'der' })
    .toString('base64');
  return te;
}

const approval = (type: string) =>
  ev({
    type,
    nodeId: 'redzone',
    status: 'needs_approval',
    approvalOwner: 'ops',
    approvalScope: 'deploy',
    ...(type === 'approval.requested' ? {} : { actor: 'human', status: 'ok' }),
  });

t.test('every documented answer of every operation, held to docs/openapi.json', async (t) => {
  const te = await keyedEnv();
  const b = await startWithQuarantinedRun(t, te, 'quarantined', async () => {});
  t.teardown(() => cleanup(b));
  const openRoot = join(te.dir, 'open-root');
  await mkdir(openRoot);
  const outsideAdapter = join(te.dir, 'outside-adapter.json');
  await writeFile(outsideAdapter, '{}');
  t.equal((await b.req('POST', '/runs', { id: 'open', artifactRoot: openRoot })).status, 201);
  t.equal((await b.req('POST', '/runs/open/events', ev({ id: 'e1' }))).status, 201);
  t.equal((await b.req('POST', '/runs/open/events', approval('approval.requested'))).status, 201);
  t.equal((await b.req('POST', '/runs/blocked/events', ev())).status, 201);
  await driveToReady(b, 'done');
  t.equal((await complete(b, 'done')).status, 201);

  t.test('what the guard refuses on every operation', async (t) => {
    const port = new URL(b.url).port;
    for (const o of operations(b)) {
      const at = { op: o.name, run: 'open' };
      await expectAnswer(t, b, at, 'host_not_allowed', () => o.send({ host: `evil.example:${port}` }));
      await expectAnswer(t, b, at, 'origin_not_allowed', () => o.send({ origin: 'https://evil.example' }));
      // The probe takes no token; a wrong one is refused.
      const token = o.name === 'GET /health' ? 'a-wrong-token-of-some-length-0123456789' : null;
      await expectAnswer(t, b, at, 'bridge_auth_required', () => o.send({}, token));
      if (o.method === 'POST') {
        await expectAnswer(t, b, at, 'unsupported_media_type', () =>
          o.send({ 'content-type': 'text/plain' }),
        );
        const post = (path: string, body: string) => () => b.req('POST', path, body);
        const path = o.path;
        await expectAnswer(t, b, at, 'invalid_query', post(`${path}?x=1`, JSON.stringify(o.body)));
        await expectAnswer(t, b, at, 'invalid_json', post(path, '{"id":'));
        const big = JSON.stringify({ ...(o.body as object), message: 'x'.repeat(16 * 1024) });
        await expectAnswer(t, b, at, 'payload_too_large', post(path, big));
      }
    }
  });

  t.test('GET /health', async (t) => {
    const at = { op: 'GET /health', run: 'open' };
    await expectAnswer(t, b, at, 200, () => b.req('GET', '/health', undefined, {}, null));
    await expectAnswer(t, b, at, 200, () => b.req('GET', '/health'));
    await expectAnswer(t, b, at, 'invalid_query', () => b.req('GET', '/health?x=1', undefined, {}, null));
  });

  t.test('GET /metrics', async (t) => {
    const at = { op: 'GET /metrics', run: 'open' };
    // The exposition is text: its body is held to the document's text/plain schema as sent.
    const text = async (): Promise<Reply> => {
      const res = await fetch(`${b.url}/metrics`, {
        headers: { 'x-harness-bridge-token': b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']! },
      });
      return { status: res.status, headers: res.headers, body: (await res.text()) as never };
    };
    const scraped = await expectAnswer(t, b, at, 200, text);
    t.match(scraped.body, /^# HELP bridge_events_accepted_total /m);
    await expectAnswer(t, b, at, 'invalid_query', () => b.req('GET', '/metrics?x=1'));
  });

  t.test('GET /runs', async (t) => {
    const at = { op: 'GET /runs', run: 'open' };
    const page = await expectAnswer(t, b, at, 200, () => b.req('GET', '/runs?limit=1'));
    t.equal((page.headers as Headers).get('x-harness-next-cursor'), '1', 'a next page is named');
    await expectAnswer(t, b, at, 'invalid_query', () => b.req('GET', '/runs?limit=0'));
  });

  t.test('GET /runs/{id}', async (t) => {
    const at = { op: 'GET /runs/{id}', run: 'open' };
    const page = await expectAnswer(t, b, at, 200, () =>
      b.req('GET', '/runs/open?eventCursor=0&eventLimit=1'),
    );
    t.equal((page.headers as Headers).get('x-harness-next-cursor'), '1', 'a next page is named');
    await expectAnswer(t, b, at, 200, () => b.req('GET', '/runs/quarantined'));
    await expectAnswer(t, b, at, 'invalid_query', () => b.req('GET', '/runs/open?eventLimit=0'));
    await expectAnswer(t, b, at, 'invalid_run_id', () => b.req('GET', '/runs/-open'));
    const token = b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!;
    await expectAnswer(t, b, at, 'client_supplied_human_token_rejected', () =>
      b.req('GET', `/runs/${token}`),
    );
    await expectAnswer(t, b, { ...at, run: 'nope' }, 'run_not_found', () => b.req('GET', '/runs/nope'));
  });

  t.test('GET /runs/{id}/export', async (t) => {
    const at = { op: 'GET /runs/{id}/export', run: 'open' };
    const bundle = await expectAnswer(t, b, at, 200, () => b.req('GET', '/runs/open/export?withArtifacts=1'));
    t.equal(bundle.body['manifest'].runId, 'open');
    await expectAnswer(t, b, at, 200, () => b.req('GET', '/runs/quarantined/export'));
    await expectAnswer(t, b, at, 'invalid_query', () => b.req('GET', '/runs/open/export?withArtifacts=2'));
    await expectAnswer(t, b, at, 'invalid_run_id', () => b.req('GET', '/runs/-open/export'));
    const token = b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!;
    await expectAnswer(t, b, at, 'client_supplied_human_token_rejected', () =>
      b.req('GET', `/runs/${token}/export`),
    );
    await expectAnswer(t, b, { ...at, run: 'nope' }, 'run_not_found', () =>
      b.req('GET', '/runs/nope/export'),
    );
    // A claimed artifact changed since its claim: its bytes would not verify, so none are exported.
    const root = join(te.dir, 'export-root');
    await mkdir(join(root, 'run'), { recursive: true });
    await writeFile(join(root, 'run', 'intake.json'), '{}');
    t.equal((await b.req('POST', '/runs/exp/events', ev({ id: 'x1', artifactRoot: root }))).status, 201);
    const written = ev({ id: 'x2', type: 'artifact.written', artifact: 'run/intake.json' });
    t.equal((await b.req('POST', '/runs/exp/events', written)).status, 201);
    await writeFile(join(root, 'run', 'intake.json'), '{"changed":true}');
    const changed = { ...at, run: 'exp' };
    await expectAnswer(t, b, changed, 'artifact_verification_failed', () =>
      b.req('GET', '/runs/exp/export?withArtifacts=1'),
    );
    // Claimed bytes past the 64 MiB cap (a sparse file): refused by their claimed size, unread.
    await truncate(join(root, 'run', 'intake.json'), 65 * 1024 * 1024);
    const big = ev({ id: 'x3', type: 'artifact.written', artifact: 'run/intake.json' });
    t.equal((await b.req('POST', '/runs/exp/events', big)).status, 201);
    const over = await expectAnswer(t, b, changed, 'payload_too_large', () =>
      b.req('GET', '/runs/exp/export?withArtifacts=1'),
    );
    t.match(
      over.body['message'],
      /^with its artifacts the bundle would be larger than 64 MiB/,
      'refused unread',
    );
    await expectAnswer(t, b, changed, 200, () => b.req('GET', '/runs/exp/export'));
  });

  t.test('POST /runs', async (t) => {
    const create = (body: unknown) => () => b.req('POST', '/runs', body);
    const at = (run: string) => ({ op: 'POST /runs', run });
    await expectAnswer(t, b, at('fresh'), 201, create({ id: 'fresh' }));
    await expectAnswer(t, b, at('fresh'), 200, create({ id: 'fresh' }));
    const refusals: [string, ErrorCode, object][] = [
      ['x1', 'client_supplied_human_token_rejected', { humanToken: 'h' }],
      ['-x2', 'invalid_run_id', {}],
      ['x3', 'run_creation_contract_violation', { status: 'completed' }],
      ['x4', 'artifact_verification_failed', { artifactRoot: join(te.dir, 'missing') }],
      ['x5', 'adapter_policy_violation', { adapterPath: outsideAdapter }],
      ['open', 'run_already_exists', { title: 'another title' }],
      ['quarantined', 'run_quarantined', {}],
    ];
    for (const [id, code, fields] of refusals)
      await expectAnswer(t, b, at(id), code, create({ id, ...fields }));
  });

  t.test('POST /runs/{id}/events', async (t) => {
    const post = (run: string, body: unknown) => () => b.req('POST', `/runs/${run}/events`, body);
    const at = (run: string, appends = 0) => ({ op: 'POST /runs/{id}/events', run, appends });
    await expectAnswer(t, b, at('open'), 201, post('open', ev({ id: 'e2' })));
    await expectAnswer(t, b, at('open'), 200, post('open', ev({ id: 'e2' })));
    const refusals: [string, ErrorCode, object][] = [
      ['open', 'client_supplied_human_token_rejected', ev({ humanToken: 'h' })],
      ['-open', 'invalid_run_id', ev()],
      ['open', 'event_contract_violation', ev({ type: 'node.unknown' })],
      ['open', 'human_approval_required', approval('approval.granted')],
      ['open', 'artifact_verification_failed', ev({ type: 'artifact.written', artifact: 'run/intake.json' })],
      ['x6', 'adapter_policy_violation', ev({ adapterPath: outsideAdapter })],
      ['open', 'event_state_violation', approval('approval.requested')],
      ['open', 'event_id_conflict', ev({ id: 'e1', message: 'other content' })],
      ['done', 'run_closed', ev()],
      ['quarantined', 'run_quarantined', ev()],
    ];
    for (const [run, code, body] of refusals) await expectAnswer(t, b, at(run), code, post(run, body));
    const completion = ev({ type: 'run.completed', nodeId: 'handoff', status: 'passed' });
    await expectAnswer(t, b, at('blocked', 1), 'finish_line_blocked', post('blocked', completion));
  });

  t.test('a bridge shutting down refuses every operation: 503 with retry-after', async (t) => {
    // An admitted operation holds the close open while requests arrive.
    let release!: () => void;
    const holding = b.ctx.queue.run('held', () => new Promise<void>((r) => (release = r)));
    const closing = b.close();
    for (const o of operations(b)) {
      const res = await expectAnswer(t, b, { op: o.name, run: 'open' }, 'bridge_busy', () => o.send({}));
      t.equal(headerRecord(res.headers)['retry-after'], '1');
    }
    release();
    await holding;
    await closing;
  });
});

t.test('the run ceiling and a failed store, held to docs/openapi.json', async (t) => {
  // Three: startup refuses a directory holding more entries that are not runs (its commit log,
  // lease) than the ceiling.
  const b = await startTestBridge(await keyedEnv(), { storage: { maxRuns: 3 } });
  t.teardown(() => cleanup(b));
  for (const id of ['only', 'full-1', 'full-2']) t.equal((await b.req('POST', '/runs', { id })).status, 201);
  const ops = {
    create: 'POST /runs',
    event: 'POST /runs/{id}/events',
    read: 'GET /runs/{id}',
    list: 'GET /runs',
    export: 'GET /runs/{id}/export',
  };

  await expectAnswer(t, b, { op: ops.create, run: 'second' }, 'run_history_full', () =>
    b.req('POST', '/runs', { id: 'second' }),
  );
  await expectAnswer(t, b, { op: ops.event, run: 'second' }, 'run_history_full', () =>
    b.req('POST', '/runs/second/events', ev()),
  );

  // An unexpected failure inside the store (a storage failure is not one: the bridge then stops,
  // test/storage/commit-log.test.ts): 500, naming nothing of it.
  const store = b.ctx.store as unknown as Record<'load' | 'page', unknown>;
  const { load, page } = store;
  t.teardown(() => Object.assign(store, { load, page }));
  const unexpected = () => {
    throw new Error('unexpected');
  };
  Object.assign(store, { load: unexpected, page: unexpected });
  await expectAnswer(t, b, { op: ops.event, run: 'only' }, 'internal_error', () =>
    b.req('POST', '/runs/only/events', ev()),
  );
  await expectAnswer(t, b, { op: ops.create, run: 'only' }, 'internal_error', () =>
    b.req('POST', '/runs', { id: 'only' }),
  );
  await expectAnswer(t, b, { op: ops.read, run: 'only' }, 'internal_error', () => b.req('GET', '/runs/only'));
  await expectAnswer(t, b, { op: ops.list, run: 'only' }, 'internal_error', () => b.req('GET', '/runs'));
  await expectAnswer(t, b, { op: ops.export, run: 'only' }, 'internal_error', () =>
    b.req('GET', '/runs/only/export'),
  );
});

t.test('every answer the document lists was given, and nothing else', async (t) => {
  t.same([...given].sort(), answers.documented());
});
