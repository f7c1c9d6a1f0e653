import t from 'tap';
import { cleanup, ev, startTestBridge, type TestBridge } from '../helpers/bridge.js';
import { expectRejected } from '../helpers/expect.js';

/**
 * SPEC Authentication 2-3, Errors 2-3 and CONTRACT 5: a grant or deny needs a human actor, the
 * access header AND the human header (neither substitutes for the other), and a matching pending
 * approval keyed by node, owner and scope.
 */
const request = (over: Record<string, unknown> = {}) =>
  ev({
    type: 'approval.requested',
    nodeId: 'redzone',
    status: 'needs_approval',
    approvalOwner: 'ops',
    approvalScope: 'deploy',
    ...over,
  });
/** A denial fails its node, so it carries the failed state's fields (SPEC States, CONTRACT 5). */
const failed = { failureReason: 'the change window is closed', recoveryPath: 'deploy on Monday' };
const decision = (type: 'approval.granted' | 'approval.denied', over: Record<string, unknown> = {}) =>
  ev({
    type,
    actor: 'human',
    nodeId: 'redzone',
    approvalOwner: 'ops',
    approvalScope: 'deploy',
    ...(type === 'approval.denied' ? failed : {}),
    ...over,
  });

async function node(b: TestBridge, runId: string, id: string) {
  const r = await b.req('GET', `/runs/${runId}`);
  return r.body['run'].nodes.find((n: any) => n.id === id);
}

t.test('approvals', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const human = b.t.env['HARNESS_HUMAN_APPROVAL_TOKEN']!;
  const access = b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!;
  const RUN = 'ap';

  const req = await b.req('POST', `/runs/${RUN}/events`, request());
  t.equal(req.status, 201);
  t.equal((await node(b, RUN, 'redzone')).state, 'needs_approval');
  t.equal(req.body['run'].pendingApprovals, 1);

  t.test('a second pending request with the same key: 409', async (t) => {
    await expectRejected(
      t,
      b,
      RUN,
      () => b.req('POST', `/runs/${RUN}/events`, request()),
      409,
      'event_state_violation',
    );
  });

  t.test('access token only: 403 human_approval_required', async (t) => {
    await expectRejected(
      t,
      b,
      RUN,
      () => b.req('POST', `/runs/${RUN}/events`, decision('approval.granted')),
      403,
      'human_approval_required',
    );
    await expectRejected(
      t,
      b,
      RUN,
      () => b.req('POST', `/runs/${RUN}/events`, decision('approval.denied')),
      403,
      'human_approval_required',
    );
  });

  t.test('a wrong or empty human token: 403', async (t) => {
    for (const token of ['', 'w'.repeat(43), access, `${human}x`]) {
      await expectRejected(
        t,
        b,
        RUN,
        () =>
          b.req('POST', `/runs/${RUN}/events`, decision('approval.granted'), {
            'x-harness-human-token': token,
          }),
        403,
        'human_approval_required',
      );
    }
  });

  t.test('human token only: 401 bridge_auth_required', async (t) => {
    await expectRejected(
      t,
      b,
      RUN,
      () =>
        b.req(
          'POST',
          `/runs/${RUN}/events`,
          decision('approval.granted'),
          { 'x-harness-human-token': human },
          null,
        ),
      401,
      'bridge_auth_required',
    );
  });

  t.test('the human token in the access header (tokens swapped): 401', async (t) => {
    await expectRejected(
      t,
      b,
      RUN,
      () =>
        b.req(
          'POST',
          `/runs/${RUN}/events`,
          decision('approval.granted'),
          { 'x-harness-human-token': access },
          human,
        ),
      401,
      'bridge_auth_required',
    );
  });

  t.test('a non-human actor with both tokens: 400', async (t) => {
    for (const actor of ['runtime-a', 'harness', 'system']) {
      await expectRejected(
        t,
        b,
        RUN,
        () =>
          b.req('POST', `/runs/${RUN}/events`, decision('approval.granted', { actor }), {
            'x-harness-human-token': human,
          }),
        400,
        'event_contract_violation',
      );
    }
  });

  t.test('a decision that does not name its owner and scope: 400', async (t) => {
    for (const type of ['approval.granted', 'approval.denied'] as const) {
      for (const missing of ['approvalOwner', 'approvalScope']) {
        const body = decision(type);
        delete body[missing];
        const r = await expectRejected(
          t,
          b,
          RUN,
          () => b.req('POST', `/runs/${RUN}/events`, body, { 'x-harness-human-token': human }),
          400,
          'event_contract_violation',
        );
        t.match(
          r.body['problems'],
          [/requires approvalOwner and approvalScope/],
          `${type} without ${missing}`,
        );
      }
    }
    t.equal((await node(b, RUN, 'redzone')).state, 'needs_approval', 'the approval is still pending');
  });

  t.test('no matching pending approval: 409', async (t) => {
    for (const over of [{ approvalOwner: 'someone' }, { approvalScope: 'other' }, { nodeId: 'implement' }]) {
      await expectRejected(
        t,
        b,
        RUN,
        () =>
          b.req('POST', `/runs/${RUN}/events`, decision('approval.granted', over), {
            'x-harness-human-token': human,
          }),
        409,
        'event_state_violation',
      );
    }
  });

  t.test('a grant with both tokens returns the node to active', async (t) => {
    const r = await b.req('POST', `/runs/${RUN}/events`, decision('approval.granted'), {
      'x-harness-human-token': human,
    });
    t.equal(r.status, 201, JSON.stringify(r.body));
    t.equal(r.body['run'].pendingApprovals, 0);
    t.equal((await node(b, RUN, 'redzone')).state, 'active');
    const view = await b.req('GET', `/runs/${RUN}`);
    t.same(view.body['run'].approvals, [
      {
        nodeId: 'redzone',
        owner: 'ops',
        scope: 'deploy',
        status: 'granted',
        requestedSeq: req.body['seq'],
        requestedAt: req.body['event'].ts,
        decidedSeq: r.body['seq'],
        decidedAt: r.body['event'].ts,
        // The node had claimed no artifact: the grant is bound to none (issue 28).
        approved: {},
      },
    ]);
    // The human token is never stored.
    t.notOk((await b.journal(RUN)).includes(human), 'the journal does not hold the human token');
  });

  t.test('a decided approval cannot be decided again', async (t) => {
    for (const type of ['approval.granted', 'approval.denied'] as const) {
      await expectRejected(
        t,
        b,
        RUN,
        () => b.req('POST', `/runs/${RUN}/events`, decision(type), { 'x-harness-human-token': human }),
        409,
        'event_state_violation',
      );
    }
  });

  t.test('a denial makes the node failed, with the reason and recovery path it carries', async (t) => {
    t.equal((await b.req('POST', `/runs/${RUN}/events`, request({ approvalScope: 'rollback' }))).status, 201);
    // Without the failed state's fields a denial is refused, as node.failed is, and decides nothing.
    for (const missing of ['failureReason', 'recoveryPath'] as const) {
      const r = await expectRejected(
        t,
        b,
        RUN,
        () =>
          b.req(
            'POST',
            `/runs/${RUN}/events`,
            decision('approval.denied', { approvalScope: 'rollback', [missing]: undefined }),
            { 'x-harness-human-token': human },
          ),
        400,
        'event_contract_violation',
      );
      t.same(r.body['problems'], [`${missing} is required when the node failed`]);
    }
    t.equal((await node(b, RUN, 'redzone')).state, 'needs_approval', 'the refused denials decided nothing');
    const r = await b.req(
      'POST',
      `/runs/${RUN}/events`,
      decision('approval.denied', { approvalScope: 'rollback' }),
      {
        'x-harness-human-token': human,
      },
    );
    t.equal(r.status, 201, JSON.stringify(r.body));
    t.match(await node(b, RUN, 'redzone'), { state: 'failed', ...failed });
    const view = await b.req('GET', `/runs/${RUN}`);
    t.equal(view.body['run'].approvals.find((a: any) => a.scope === 'rollback').status, 'denied');
    // A denial that names another state for its node does not fail it, so it needs no failure fields.
    t.equal((await b.req('POST', `/runs/${RUN}/events`, request({ approvalScope: 'hold' }))).status, 201);
    const other = await b.req(
      'POST',
      `/runs/${RUN}/events`,
      decision('approval.denied', {
        approvalScope: 'hold',
        nodeState: 'pending',
        failureReason: undefined,
        recoveryPath: undefined,
      }),
      { 'x-harness-human-token': human },
    );
    t.equal(other.status, 201, JSON.stringify(other.body));
    t.equal((await node(b, RUN, 'redzone')).state, 'pending');
  });

  t.test('a decision for a run that does not exist stores nothing and creates no run', async (t) => {
    await expectRejected(
      t,
      b,
      'ap-none',
      () =>
        b.req('POST', '/runs/ap-none/events', decision('approval.granted'), {
          'x-harness-human-token': human,
        }),
      409,
      'event_state_violation',
    );
    t.equal((await b.req('GET', '/runs/ap-none')).status, 404);
  });
});

t.test('the human token is sealed to each run; the access token may rotate', async (t) => {
  const b = await startTestBridge();
  const env = b.t.env;
  t.equal((await b.req('POST', '/runs/seal/events', request())).status, 201);
  const oldHuman = env['HARNESS_HUMAN_APPROVAL_TOKEN']!;
  await b.close();
  const { secret } = await import('../helpers/bridge.js');
  const rotated = {
    ...b.t,
    env: { ...env, HARNESS_HUMAN_APPROVAL_TOKEN: secret(), HARNESS_BRIDGE_ACCESS_TOKEN: secret() },
  };
  const b2 = await startTestBridge(rotated);
  t.teardown(() => cleanup(b2));
  // The old access token no longer works; the new one does.
  t.equal(
    (await b2.req('GET', '/runs/seal', undefined, {}, env['HARNESS_BRIDGE_ACCESS_TOKEN']!)).status,
    401,
  );
  t.equal((await b2.req('GET', '/runs/seal')).status, 200);
  // The new human token matches the bridge but not the digest sealed to this run.
  await expectRejected(
    t,
    b2,
    'seal',
    () =>
      b2.req('POST', '/runs/seal/events', decision('approval.granted'), {
        'x-harness-human-token': rotated.env.HARNESS_HUMAN_APPROVAL_TOKEN,
      }),
    403,
    'human_approval_required',
  );
  // The old one no longer matches the bridge.
  await expectRejected(
    t,
    b2,
    'seal',
    () =>
      b2.req('POST', '/runs/seal/events', decision('approval.granted'), {
        'x-harness-human-token': oldHuman,
      }),
    403,
    'human_approval_required',
  );
  // A run created under the new token is decided with it.
  t.equal((await b2.req('POST', '/runs/seal2/events', request())).status, 201);
  const ok = await b2.req('POST', '/runs/seal2/events', decision('approval.granted'), {
    'x-harness-human-token': rotated.env.HARNESS_HUMAN_APPROVAL_TOKEN,
  });
  t.equal(ok.status, 201);
});
