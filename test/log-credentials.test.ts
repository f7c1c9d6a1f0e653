import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { cleanup, ev, makeTestEnv, startTestBridge } from './helpers/bridge.js';
import { complete, driveToReady } from './helpers/complete-run.js';
import { expectRejected } from './helpers/expect.js';
import { passingAssessment, passingProof } from './helpers/finish-line-fixture.js';

/**
 * Issue 34: the bridge's JSON log (HARNESS_LOG_LEVEL=debug, the most it writes short of trace)
 * over a whole scenario: events, an approval granted with the human token, refused events (one
 * carrying a credential in its body, one sending the human token where it is not wanted), a
 * refused completion and an accepted one. No credential value, nor any x-harness-* header value,
 * may appear in any line; each request has its one line with run id, event id and code.
 */
t.test('a full scenario logged at debug holds no credential and one line per request', async (t) => {
  const te = await makeTestEnv();
  te.env['HARNESS_LOG_LEVEL'] = 'debug';
  const exportKey = generateKeyPairSync('ed25519')
    .privateKey.export({ type: 'pkcs8', format: 'der' })
    .toString('base64');
  te.env['HARNESS_BRIDGE_EXPORT_KEY'] = exportKey;
  const lines: string[] = [];
  const b = await startTestBridge(te, {
    realGate: true,
    logTo: { write: (line: string) => lines.push(line) },
  });
  t.teardown(() => cleanup(b));
  const access = te.env['HARNESS_BRIDGE_ACCESS_TOKEN']!;
  const human = te.env['HARNESS_HUMAN_APPROVAL_TOKEN']!;
  const key = te.env['HARNESS_BRIDGE_INTEGRITY_KEY']!;
  const humanHeader = { 'x-harness-human-token': human };

  const at = new Date().toISOString();
  await driveToReady(b, 'logged', {
    'proof/proof.json': JSON.stringify(passingProof('logged', at)),
    'production/layer-assessment.json': JSON.stringify(passingAssessment('logged', at)),
  });
  const approval = { nodeId: 'redzone', approvalOwner: 'lead', approvalScope: 'deploy' };
  const requested = ev({ id: 'ask-1', type: 'approval.requested', status: 'needs_approval', ...approval });
  t.equal((await b.req('POST', '/runs/logged/events', requested)).status, 201);
  const granted = ev({ id: 'grant-1', type: 'approval.granted', actor: 'human', ...approval });
  t.equal((await b.req('POST', '/runs/logged/events', granted, humanHeader)).status, 201);
  const passed = ev({
    id: 'pass-1',
    type: 'gate.fired',
    nodeId: 'redzone',
    nodeState: 'passed',
    status: 'passed',
  });
  t.equal((await b.req('POST', '/runs/logged/events', passed)).status, 201, 'the node passes again');
  // Refused: a credential value in the body, the human token on a plain event, a wrong access
  // token, a run ID that is the access token, and a completion before the run is whole.
  await expectRejected(
    t,
    b,
    'logged',
    () => b.req('POST', '/runs/logged/events', ev({ id: 'leak-1', message: `token ${key}` })),
    400,
    'client_supplied_human_token_rejected',
  );
  await expectRejected(
    t,
    b,
    'other',
    () => b.req('POST', '/runs/other/events', ev({ id: 'wrong-1' }), {}, `${access.slice(0, -2)}xx`),
    401,
    'bridge_auth_required',
  );
  const exported = await b.req('POST', '/runs/logged/events', ev({ id: 'leak-2', message: exportKey }));
  t.equal(exported.status, 400, 'the export key in a body is refused too');
  const carrying = await b.req('POST', `/runs/${access}/events`, ev({ id: human }));
  t.equal(carrying.status, 400, JSON.stringify(carrying.body));
  // A refused completion stores its run.blocked record (complete-run.ts expectBlocked).
  t.equal((await b.req('POST', '/runs/blocked/events', ev({ id: 'b-1' }))).status, 201);
  const blocked = await b.req(
    'POST',
    '/runs/blocked/events',
    ev({ id: 'b-2', type: 'run.completed', nodeId: 'handoff', status: 'passed' }),
  );
  t.equal(blocked.body['error'], 'finish_line_blocked');
  const done = await complete(b, 'logged');
  t.equal(done.status, 201, JSON.stringify(done.body).slice(0, 300));
  t.equal((await b.req('GET', '/runs/logged')).status, 200);
  t.equal((await b.req('GET', '/metrics')).status, 200);

  const log = lines.join('');
  t.ok(lines.length > 50, `lines were written (${lines.length})`);
  for (const [name, value] of [
    ['access token', access],
    ['human token', human],
    ['integrity key', key],
    ['export key', exportKey],
  ] as const) {
    t.notOk(log.includes(value), `the ${name} is in no line`);
    t.notOk(log.includes(value.slice(0, 16)), `nor its first 16 characters`);
    // An export key's first characters are its encoding's fixed prefix, not key material.
    const middle = Math.floor(value.length / 2);
    t.notOk(log.includes(value.slice(middle, middle + 16)), `nor 16 characters from its middle`);
  }
  t.notMatch(log, /x-harness-(bridge|human)-token"\s*:\s*"(?!\[withheld\])/, 'no token header value');
  const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  const requests = parsed.filter((l) => l['msg'] === 'request');
  const grant = requests.find((l) => l['eventId'] === 'grant-1');
  t.match(grant, { method: 'POST', route: '/runs/:id/events', status: 201, runId: 'logged' }, 'the grant');
  t.match(
    // Refused before its body is read: no event ID to log.
    requests.find((l) => l['runId'] === 'other'),
    { status: 401, code: 'bridge_auth_required', runId: 'other' },
    'a refusal has its code',
  );
  t.match(
    requests.find((l) => l['eventId'] === 'b-2'),
    { status: 409, code: 'finish_line_blocked', runId: 'blocked' },
    'the refused completion',
  );
  t.ok(
    requests.every((l) => typeof l['reqId'] === 'string' && typeof l['ms'] === 'number'),
    'every request line has its id and time',
  );
  // The request whose run ID is the access token and event ID the human token: both withheld.
  t.match(
    requests.find((l) => l['status'] === 400 && l['eventId'] !== 'leak-1' && l['runId'] !== 'logged'),
    {
      runId: '[withheld: resembles a bridge credential]',
      eventId: '[withheld: resembles a bridge credential]',
    },
  );
});

t.test('the default level writes no request lines', async (t) => {
  const lines: string[] = [];
  const b = await startTestBridge(undefined, { logTo: { write: (line: string) => lines.push(line) } });
  t.teardown(() => cleanup(b));
  t.equal((await b.req('POST', '/runs/quiet/events', ev())).status, 201);
  await expectRejected(
    t,
    b,
    'quiet',
    () => b.req('POST', '/runs/quiet/events', ev({ type: 'x' })),
    400,
    'event_contract_violation',
  );
  t.same(lines, [], 'nothing at warn for ordinary traffic');
});
