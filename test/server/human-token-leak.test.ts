import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';
import { assertEnvelope, expectRejected, storedRun } from '../helpers/expect.js';

/**
 * SPEC Authentication and Errors 2, CONTRACT 3: the human token travels only in its header. A body
 * that names or carries any credential is refused before anything is stored, no credential is ever
 * written to the data directory, and no answer echoes one back.
 */
async function dataDirText(dir: string): Promise<string> {
  let text = '';
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) text += await readFile(join(entry.parentPath, entry.name), 'utf8');
  }
  return text;
}

t.test('credentials in bodies', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const env = b.t.env;
  const human = env['HARNESS_HUMAN_APPROVAL_TOKEN']!;
  const access = env['HARNESS_BRIDGE_ACCESS_TOKEN']!;
  const key = env['HARNESS_BRIDGE_INTEGRITY_KEY']!;
  const RUN = 'leak';
  t.equal((await b.req('POST', `/runs/${RUN}/events`, ev())).status, 201);
  const code = 'client_supplied_human_token_rejected';

  t.test('fields that name a token are refused on events', async (t) => {
    for (const field of [
      'humanToken',
      'humanApprovalToken',
      'human_approval_token',
      'x-harness-human-token',
      'auth',
      'Authorization',
      'accessToken',
      'bridgeToken',
      'token',
    ]) {
      await expectRejected(
        t,
        b,
        RUN,
        () => b.req('POST', `/runs/${RUN}/events`, ev({ [field]: 'anything' })),
        400,
        code,
      );
    }
  });

  t.test('a grant carrying the human token in its body (and not its header) is refused', async (t) => {
    t.equal(
      (
        await b.req(
          'POST',
          `/runs/${RUN}/events`,
          ev({
            type: 'approval.requested',
            status: 'needs_approval',
            approvalOwner: 'o',
            approvalScope: 's',
          }),
        )
      ).status,
      201,
    );
    await expectRejected(
      t,
      b,
      RUN,
      () =>
        b.req(
          'POST',
          `/runs/${RUN}/events`,
          ev({
            type: 'approval.granted',
            actor: 'human',
            approvalOwner: 'o',
            approvalScope: 's',
            humanToken: human,
          }),
        ),
      400,
      code,
    );
  });

  t.test('a credential value in any string field is refused', async (t) => {
    for (const secret of [human, access, key]) {
      for (const field of ['message', 'skipReason', 'approvalScope', 'selfHealPrUrl', 'id']) {
        await expectRejected(
          t,
          b,
          RUN,
          () => b.req('POST', `/runs/${RUN}/events`, ev({ [field]: `prefix ${secret} suffix` })),
          400,
          code,
        );
      }
    }
  });

  t.test('the same rules on POST /runs', async (t) => {
    for (const body of [
      { id: 'leak2', humanToken: human },
      { id: 'leak2', humanApprovalToken: 'x' },
      { id: 'leak2', auth: 'x' },
      { id: 'leak2', title: `t ${human}` },
      { id: 'leak2', task: access },
    ]) {
      await expectRejected(t, b, 'leak2', () => b.req('POST', '/runs', body), 400, code);
    }
    t.equal((await b.req('GET', '/runs/leak2')).status, 404, 'no run created');
  });

  t.test('a JSON array carrying a credential is refused as one, not only as a malformed body', async (t) => {
    for (const secret of [human, access]) {
      await expectRejected(t, b, RUN, () => b.req('POST', `/runs/${RUN}/events`, [secret]), 400, code);
      await expectRejected(t, b, 'leak3', () => b.req('POST', '/runs', ['x', secret]), 400, code);
    }
    t.equal(await storedRun(b, 'leak3'), null, 'no run created');
  });

  t.test('a run ID that carries a credential is refused on writes and reads', async (t) => {
    // Run IDs are stored and shown in every view (and, through the UI proxy, in the browser).
    for (const s of [human, access, key]) {
      const id = `r${s}`;
      await expectRejected(t, b, id, () => b.req('POST', `/runs/${id}/events`, ev()), 400, code);
      const read = await b.req('GET', `/runs/${id}`);
      t.equal(read.status, 400);
      assertEnvelope(t, read.body, code);
      t.notOk(JSON.stringify(read.body).includes(s), 'the refusal does not echo it');
    }
    const list = await b.req('GET', '/runs');
    for (const s of [human, access, key])
      t.notOk(JSON.stringify(list.body).includes(s), 'no such run listed');
  });

  t.test('no answer echoes a credential, whatever carries it', async (t) => {
    const journal = await b.journal(RUN);
    const answers = [
      await b.req('POST', `/runs/${RUN}/events`, ev({ [human]: 1 })),
      await b.req('POST', `/runs/${RUN}/events`, ev({ humanToken: human })),
      await b.req('POST', `/runs/${RUN}/events`, ev({ type: human })),
      await b.req('POST', `/runs/${RUN}/events`, ev({ nodeId: human })),
      await b.req('POST', `/runs/${RUN}/events`, `{"message":"${human}`),
      await b.req('POST', '/runs', { id: 'x', [access]: 1 }),
      await b.req('GET', `/runs?${human}=1`),
      await b.req('GET', `/runs/${RUN}?${encodeURIComponent(key)}=1`),
      await b.req('GET', `/runs/${human}`),
      await b.req('GET', `/runs?limit=${human}`),
    ];
    for (const a of answers) {
      t.ok(a.status >= 400 && a.status < 500, `refused (${a.status} ${a.body['error']})`);
      const text = JSON.stringify(a.body);
      for (const s of [human, access, key]) t.notOk(text.includes(s), 'no credential in the answer');
    }
    t.ok((await b.journal(RUN)).equals(journal), 'nothing was appended');
    t.equal(await storedRun(b, 'x'), null, 'no run x was created');
  });

  t.test('nothing in the data directory holds a credential', async (t) => {
    const text = await dataDirText(b.t.dataDir);
    t.ok(text.length > 0);
    for (const s of [human, access, key]) t.notOk(text.includes(s), 'credential not persisted');
  });
});

t.test('a long credential cut to 64 characters in an echo is still withheld', async (t) => {
  const { makeTestEnv } = await import('../helpers/bridge.js');
  const te = await makeTestEnv();
  const long = `L${'0123456789abcdefghijklmnopqrstuvwxyz'.repeat(3)}`;
  te.env['HARNESS_HUMAN_APPROVAL_TOKEN'] = long;
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  const answers = [
    await b.req('GET', `/runs?${long}=1`),
    await b.req('POST', '/runs/x/events', ev({ [long]: 1 })),
    await b.req('POST', '/runs/x/events', ev({ [`${long.slice(10, 40)}`]: 1 })),
  ];
  for (const a of answers) {
    t.equal(a.status, 400);
    const text = JSON.stringify(a.body);
    for (let i = 0; i + 16 <= long.length; i++) {
      if (text.includes(long.slice(i, i + 16))) {
        t.fail(`the answer holds 16 characters of the credential: ${text}`);
        break;
      }
    }
  }
  // An ordinary unknown name is still named, so agents learn what is wrong.
  const plain = await b.req('POST', '/runs/x/events', ev({ colour: 'red' }));
  t.ok(plain.body['problems'].some((p: string) => p.includes('colour')));
  t.equal(await storedRun(b, 'x'), null, 'no run x was created');
});
