import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import type { TSchema } from '#typebox';
import { Compile } from '#typebox/compile';
import { AuthenticatedHealth, PublicHealth } from '../../src/server/routes/health.js';
import { exportKeyId } from '../../src/storage/bundle-seal.js';
import { cleanup, ev, makeTestEnv, startTestBridge } from '../helpers/bridge.js';
import { assertEnvelope, expectRejected } from '../helpers/expect.js';

/** The first few ways `body` misses `schema` (the bridge serializes with JSON.stringify, unchecked). */
const schemaErrors = (schema: TSchema, body: unknown) => {
  const check = Compile(schema);
  return check.Check(body)
    ? []
    : [...check.Errors(body)].slice(0, 5).map((e) => `${e.instancePath} ${e.message}`);
};

/** SPEC Authentication and CONTRACT 3-4: the access token guards every endpoint but the health probe. */
t.test('access token', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const env = b.t.env;
  t.equal((await b.req('POST', '/runs/r1/events', ev())).status, 201);

  const wrongTokens: [string, string | null][] = [
    ['missing', null],
    ['empty', ''],
    ['wrong', 'x'.repeat(43)],
    ['access token with one byte changed', `${env['HARNESS_BRIDGE_ACCESS_TOKEN']!.slice(0, -1)}~`],
    ['access token with a suffix', `${env['HARNESS_BRIDGE_ACCESS_TOKEN']}x`],
    ['the human token', env['HARNESS_HUMAN_APPROVAL_TOKEN']!],
    ['the integrity key', env['HARNESS_BRIDGE_INTEGRITY_KEY']!],
  ];
  for (const [label, token] of wrongTokens) {
    t.test(`${label}: every protected endpoint answers 401 bridge_auth_required`, async (t) => {
      await expectRejected(
        t,
        b,
        'r1',
        () => b.req('GET', '/runs', undefined, {}, token),
        401,
        'bridge_auth_required',
      );
      await expectRejected(
        t,
        b,
        'r1',
        () => b.req('GET', '/runs/r1', undefined, {}, token),
        401,
        'bridge_auth_required',
      );
      await expectRejected(
        t,
        b,
        'r1',
        () => b.req('POST', '/runs/r1/events', ev(), {}, token),
        401,
        'bridge_auth_required',
      );
      await expectRejected(
        t,
        b,
        'r2',
        () => b.req('POST', '/runs', { id: 'r2' }, {}, token),
        401,
        'bridge_auth_required',
      );
      // Nothing was created by the refused POST /runs.
      t.equal((await b.req('GET', '/runs/r2')).status, 404);
    });
  }

  t.test('the token is checked before the body is parsed', async (t) => {
    await expectRejected(
      t,
      b,
      'r1',
      () => b.req('POST', '/runs/r1/events', '{not json', {}, null),
      401,
      'bridge_auth_required',
    );
    await expectRejected(
      t,
      b,
      'r1',
      () => b.req('POST', '/runs/r1/events', 'x'.repeat(64 * 1024), {}, null),
      401,
      'bridge_auth_required',
    );
  });

  t.test('an unknown route also needs the token', async (t) => {
    const r = await b.req('GET', '/nothing-here', undefined, {}, null);
    t.equal(r.status, 401);
    assertEnvelope(t, r.body, 'bridge_auth_required');
    const ok = await b.req('GET', '/nothing-here');
    t.equal(ok.status, 404);
    assertEnvelope(t, ok.body, 'not_found');
  });

  t.test('the right token is accepted on every endpoint', async (t) => {
    t.equal((await b.req('GET', '/runs')).status, 200);
    t.equal((await b.req('GET', '/runs/r1')).status, 200);
    t.equal((await b.req('POST', '/runs', { id: 'r3' })).status, 201);
    t.equal((await b.req('POST', '/runs/r1/events', ev())).status, 201);
  });
});

t.test('GET /health', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const env = b.t.env;

  t.test('without a token: liveness metadata and nothing else', async (t) => {
    const r = await b.req('GET', '/health', undefined, {}, null);
    t.equal(r.status, 200);
    t.same(r.body, {
      ok: true,
      service: 'harness-bridge',
      contractVersion: 'harness.connector-events.v0.5',
      bridgeVersion: '0.8',
      listenMode: 'loopback',
    });
    t.same(schemaErrors(PublicHealth, r.body), [], 'the public answer matches its closed schema');
    t.not(schemaErrors(AuthenticatedHealth, r.body), [], 'and not the authenticated one');
  });

  t.test('with the token: operational detail, credential states but never values', async (t) => {
    const r = await b.req('GET', '/health');
    t.equal(r.status, 200);
    t.equal(r.body['dataDir'], b.t.dataDir);
    t.equal(r.body['repoRoot'], b.t.repo);
    t.equal(r.body['port'], Number(new URL(b.url).port));
    t.equal(r.body['nodeIds'].length, 14);
    t.equal(r.body['eventTypes'].length, 16);
    t.equal(r.body['trustPin'], env['HARNESS_REVIEW_TRUST_SHA256']);
    t.same(r.body['credentials'], {
      integrityKey: 'configured',
      accessToken: 'configured',
      humanApprovalToken: 'configured',
      exportKey: { state: 'not configured' },
    });
    t.same(Object.keys(r.body['cache']).sort(), ['executions', 'hits']);
    t.same(schemaErrors(AuthenticatedHealth, r.body), [], 'the answer matches its closed schema');
    t.match(r.body['limits'], {
      eventMaxBytes: 16 * 1024,
      viewTextsMaxBytes: 256 * 1024,
      viewApprovalsMaxBytes: 256 * 1024,
      viewProblemsMaxBytes: 64 * 1024,
      journalMaxBytes: 4 * 1024 ** 3,
      snapshotMaxBytes: 8 * 1024 ** 2,
    });
    const text = JSON.stringify(r.body);
    for (const name of [
      'HARNESS_BRIDGE_INTEGRITY_KEY',
      'HARNESS_BRIDGE_ACCESS_TOKEN',
      'HARNESS_HUMAN_APPROVAL_TOKEN',
    ]) {
      t.notOk(text.includes(env[name]!), `${name} value is not in the body`);
    }
  });

  t.test('the limits name the ceilings this bridge enforces, not the defaults', async (t) => {
    const small = await startTestBridge(undefined, {
      storage: { journalMaxBytes: 4096, snapshotMaxBytes: 2048 },
    });
    t.teardown(() => cleanup(small));
    const r = await small.req('GET', '/health');
    t.equal(r.body['limits']['journalMaxBytes'], 4096);
    t.equal(r.body['limits']['snapshotMaxBytes'], 2048);
  });

  t.test('with a wrong token: 401, not the public answer', async (t) => {
    for (const token of ['', 'wrong', env['HARNESS_HUMAN_APPROVAL_TOKEN']!]) {
      const r = await b.req('GET', '/health', undefined, {}, token);
      t.equal(r.status, 401);
      assertEnvelope(t, r.body, 'bridge_auth_required');
    }
  });
});

t.test('no response ever carries a credential value', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const env = b.t.env;
  const secrets = [
    env['HARNESS_BRIDGE_INTEGRITY_KEY']!,
    env['HARNESS_BRIDGE_ACCESS_TOKEN']!,
    env['HARNESS_HUMAN_APPROVAL_TOKEN']!,
  ];
  const human = { 'x-harness-human-token': env['HARNESS_HUMAN_APPROVAL_TOKEN']! };
  const answers = [
    await b.req('POST', '/runs', { id: 'c1', title: 't', artifactRoot: b.t.artifactRoot }),
    await b.req(
      'POST',
      '/runs/c1/events',
      ev({ type: 'approval.requested', status: 'needs_approval', approvalOwner: 'o', approvalScope: 's' }),
    ),
    await b.req(
      'POST',
      '/runs/c1/events',
      ev({ type: 'approval.granted', actor: 'human', approvalOwner: 'o', approvalScope: 's' }),
      human,
    ),
    await b.req('GET', '/runs'),
    await b.req('GET', '/runs/c1'),
    await b.req('GET', '/health'),
  ];
  for (const a of answers) {
    t.ok(a.status < 300, `${a.status} ${JSON.stringify(a.body).slice(0, 200)}`);
    const text = JSON.stringify(a.body) + JSON.stringify([...a.headers.entries()]);
    for (const s of secrets) t.notOk(text.includes(s), 'no credential in the response');
    t.notOk(text.includes(b.t.artifactRoot), 'no absolute artifact root in a run answer');
  }
});

t.test('GET /health with an export key: its key ID, never the key', async (t) => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const text = privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64');
  const te = await makeTestEnv();
  te.env['HARNESS_BRIDGE_EXPORT_KEY'] = text;
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  const r = await b.req('GET', '/health');
  t.same(r.body['credentials']['exportKey'], { state: 'configured', keyId: exportKeyId(publicKey) });
  t.same(schemaErrors(AuthenticatedHealth, r.body), [], 'the answer matches its closed schema');
  t.notOk(JSON.stringify(r.body).includes(text), 'the key is not in the answer');
});
