import { readdir } from 'node:fs/promises';
import t from 'tap';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';
import { expectRejected } from '../helpers/expect.js';

/**
 * A JSON string escape may spell a lone surrogate (`"\ud800"`), which JSON.parse accepts and the
 * schema's length checks pass, but RFC 8785 canonical JSON (what the bridge MACs) cannot encode.
 * Such a body is refused at validation as a contract violation naming the field: never a 500 from
 * the sealing step, never a run, a config or a temp directory left behind.
 */
const LONE = ['\ud800', '\udfff', 'a\udc00b', 'x\ud83d'];

const tmpDirs = async (dataDir: string) => (await readdir(dataDir)).filter((n) => n.startsWith('.tmp-run-'));

t.test('events: 400 event_contract_violation naming the field, nothing stored', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  t.equal((await b.req('POST', '/runs/lone/events', ev())).status, 201);
  const fields: Record<string, Record<string, unknown>> = {
    id: {},
    message: {},
    skipReason: { type: 'node.skipped', status: 'skipped', nodeState: 'skipped' },
    approvalOwner: { type: 'approval.requested', status: 'needs_approval', approvalScope: 's' },
    artifactRoot: {},
  };
  for (const [field, base] of Object.entries(fields)) {
    for (const value of LONE) {
      const res = await expectRejected(
        t,
        b,
        'lone',
        () => b.req('POST', '/runs/lone/events', ev({ ...base, [field]: value })),
        400,
        'event_contract_violation',
      );
      t.ok(
        res.body['problems'].some((p: string) => p.startsWith(`${field}: `) && p.includes('well-formed')),
        `${field} is named: ${JSON.stringify(res.body['problems'])}`,
      );
    }
  }
  // Every problem at once, beside the schema's own.
  const both = await expectRejected(
    t,
    b,
    'lone',
    () => b.req('POST', '/runs/lone/events', ev({ message: '\ud800', recoveryPath: '\udc00', nodeId: 'x' })),
    400,
    'event_contract_violation',
  );
  t.ok(both.body['problems'].some((p: string) => p.startsWith('message: ')));
  t.ok(both.body['problems'].some((p: string) => p.startsWith('recoveryPath: ')));
  t.ok(both.body['problems'].some((p: string) => p.startsWith('nodeId')));
});

t.test('a first event with a lone surrogate creates no run', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  for (const [i, value] of LONE.entries()) {
    await expectRejected(
      t,
      b,
      `new${i}`,
      () => b.req('POST', `/runs/new${i}/events`, ev({ message: value, artifactRoot: b.t.artifactRoot })),
      400,
      'event_contract_violation',
    );
    t.equal((await b.req('GET', `/runs/new${i}`)).status, 404, 'no run');
  }
  t.same(await tmpDirs(b.t.dataDir), [], 'no temp directory left');
  t.equal(b.ctx.store.size, 0);
});

t.test('a surrogate pair is well-formed: accepted and stored exactly', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const text = 'ok \ud83d\ude00 \u20ac';
  // Sent as escapes, as the lone surrogates are.
  const body = JSON.stringify(ev({ message: text })).replace('😀', '\\ud83d\\ude00');
  t.ok(body.includes('\\ud83d\\ude00'));
  const res = await b.req('POST', '/runs/pair/events', body);
  t.equal(res.status, 201, JSON.stringify(res.body));
  t.equal(res.body['event'].message, text);
  t.equal((await b.req('POST', '/runs', { id: 'pair2', title: text })).status, 201);
});

t.test('POST /runs: 400 run_creation_contract_violation naming the field, nothing stored', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  for (const field of ['title', 'task', 'risk', 'artifactRoot', 'adapterPath']) {
    for (const [i, value] of LONE.entries()) {
      const id = `c-${field}-${i}`;
      const res = await expectRejected(
        t,
        b,
        id,
        () => b.req('POST', '/runs', { id, [field]: value }),
        400,
        'run_creation_contract_violation',
      );
      t.ok(
        res.body['problems'].some((p: string) => p.startsWith(`${field}: `) && p.includes('well-formed')),
        `${field} is named: ${JSON.stringify(res.body['problems'])}`,
      );
      t.equal((await b.req('GET', `/runs/${id}`)).status, 404, 'no run');
    }
  }
  t.same(await tmpDirs(b.t.dataDir), [], 'no temp directory left');

  // A repeat for an existing run is refused the same way, before any comparison or sealing.
  t.equal((await b.req('POST', '/runs', { id: 'kept', title: 'one' })).status, 201);
  const config = await b.config('kept');
  await expectRejected(
    t,
    b,
    'kept',
    () => b.req('POST', '/runs', { id: 'kept', title: '\ud800', artifactRoot: b.t.artifactRoot }),
    400,
    'run_creation_contract_violation',
  );
  t.ok((await b.config('kept')).equals(config), 'config bytes unchanged');
});

t.test('a run creation that fails while writing its files leaves nothing behind', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const { newConfig } = await import('../../src/server/create-run.js');
  const { resolveSetup } = await import('../../src/server/run-setup.js');
  const setup = await resolveSetup(b.ctx, {});
  // A config the sealing step cannot canonicalize, past any HTTP validation: storage must clean up.
  const bad = newConfig(b.ctx, 'unsealable', setup, {
    metadata: { title: '\ud800' },
    runMode: null,
    eventSource: null,
  });
  const before = await readdir(b.t.dataDir);
  await t.rejects(b.ctx.store.create(bad));
  t.same(await readdir(b.t.dataDir), before, 'the data directory holds what it did');
  t.same(await tmpDirs(b.t.dataDir), [], 'no temp directory left');
  t.equal(b.ctx.store.has('unsealable'), false, 'not indexed');
  t.equal((await b.req('POST', '/runs', { id: 'unsealable' })).status, 201, 'the ID can still be created');
});
