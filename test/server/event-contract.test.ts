import t, { type Test } from 'tap';
import {
  EVENT_SOURCES,
  EVENT_TYPES,
  NODE_IDS,
  RUN_MODES,
  SOURCES_BY_MODE,
} from '../../src/contract/index.js';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';
import { assertEnvelope, expectRejected, raw, records, storedRun } from '../helpers/expect.js';

/**
 * SPEC "Event (RunEvent)", "States and transitions", "Events", "Limits" and CONTRACT 3-5: the
 * closed event contract. Every case changes one thing in a known-good event, expects the code and
 * proves the journal is byte-for-byte unchanged.
 */
t.test('event contract', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const RUN = 'ec';
  t.equal((await b.req('POST', `/runs/${RUN}/events`, ev())).status, 201, 'known-good event accepted');
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    b.req('POST', `/runs/${RUN}/events`, body, headers);
  const violation = (t: Test, label: string, body: unknown, mentions: string[] = []) =>
    t.test(`${label}: 400 event_contract_violation`, async (t) => {
      const r = await expectRejected(t, b, RUN, () => post(body), 400, 'event_contract_violation');
      for (const m of mentions) {
        t.ok(
          r.body['problems'].some((p: string) => p.includes(m)),
          `problems mention ${m}: ${JSON.stringify(r.body['problems'])}`,
        );
      }
    });
  const accepted = (t: Test, label: string, body: Record<string, unknown>) =>
    t.test(`${label}: accepted`, async (t) => {
      const r = await post(body);
      t.equal(r.status, 201, JSON.stringify(r.body));
    });

  t.test('required fields', async (t) => {
    for (const field of ['type', 'actor', 'message', 'status', 'runMode', 'eventSource', 'nodeId']) {
      const body = ev();
      delete body[field];
      violation(t, `without ${field}`, body, [field]);
    }
  });

  t.test('every problem is reported at once', async (t) => {
    const r = await expectRejected(
      t,
      b,
      RUN,
      () =>
        post({
          type: 'node.failed',
          status: 'failed',
          runMode: 'live',
          eventSource: 'api',
          nodeId: 'intake',
        }),
      400,
      'event_contract_violation',
    );
    for (const m of ['actor', 'message', 'failureReason', 'recoveryPath']) {
      t.ok(
        r.body['problems'].some((p: string) => p.includes(m)),
        `problems mention ${m}`,
      );
    }
  });

  t.test('a field of the wrong value or type does not hide the rule problems', async (t) => {
    // The mode/source table and the artifact path rule read these fields: an unknown mode or a
    // non-string artifact is the schema's problem, and the conditional rules are still reported.
    for (const [over, mentions] of [
      [{ runMode: 'Live', status: 'failed' }, ['runMode', 'failureReason', 'recoveryPath']],
      [{ runMode: 'constructor', status: 'skipped' }, ['runMode', 'skipReason']],
      [{ artifact: 5, status: 'skipped' }, ['artifact', 'skipReason']],
    ] as const) {
      const r = await expectRejected(t, b, RUN, () => post(ev(over)), 400, 'event_contract_violation');
      for (const m of mentions) {
        t.ok(
          r.body['problems'].some((p: string) => p.includes(m)),
          `problems mention ${m}: ${JSON.stringify(r.body['problems'])}`,
        );
      }
    }
  });

  t.test('closed vocabularies', async (t) => {
    violation(t, 'unknown type', ev({ type: 'node.exploded' }), [
      `type: must be one of ${EVENT_TYPES.join(', ')}`,
    ]);
    violation(t, 'type of another case', ev({ type: 'Node.Entered' }));
    violation(t, 'cloud expansion node', ev({ nodeId: 'cloud-aws' }), [
      `nodeId: must be one of ${NODE_IDS.join(', ')}`,
    ]);
    violation(t, 'node id of another case', ev({ nodeId: 'Intake' }));
    violation(t, 'unknown actor', ev({ actor: 'robot' }));
    violation(t, 'unknown status', ev({ status: 'done' }));
    violation(t, 'unknown runMode', ev({ runMode: 'dry' }), [
      `runMode: must be one of ${RUN_MODES.join(', ')}`,
    ]);
    violation(t, 'unknown eventSource', ev({ eventSource: 'stdin' }));
    violation(t, 'unknown nodeState', ev({ nodeState: 'done' }));
    for (const type of EVENT_TYPES) {
      t.test(`type ${type} is in the contract`, async (t) => {
        // Well-formed for its type; state rules may still refuse it, but never as a contract violation.
        const runId = `types-${type.replace('_', '-')}`;
        const stored = await storedRun(b, runId);
        const r = await b.req(
          'POST',
          `/runs/${runId}/events`,
          ev({
            type,
            actor: type.startsWith('approval.') && type !== 'approval.requested' ? 'human' : 'runtime-a',
            status: type === 'approval.requested' ? 'needs_approval' : 'ok',
            approvalOwner: 'o',
            approvalScope: 's',
            skipReason: 'r',
            failureReason: 'f',
            recoveryPath: 'p',
            ...(type === 'artifact.written' ? { artifact: 'run/intake.json' } : {}),
            selfHealPrUrl: 'https://github.com/o/r/pull/1',
          }),
          { 'x-harness-human-token': b.t.env['HARNESS_HUMAN_APPROVAL_TOKEN']! },
        );
        t.not(r.body['error'], 'event_contract_violation', JSON.stringify(r.body));
        t.ok(r.status === 201 || r.status === 409, `${r.status} ${r.body['error']}`);
        if (r.body['error'] === 'finish_line_blocked') {
          const added = records(await b.journal(runId)).map((x) => x.event.type);
          t.same(added, ['run.blocked'], 'a refused completion stores only its run.blocked');
        } else if (r.status === 409) {
          t.same(await storedRun(b, runId), stored, 'a refused event stores nothing');
        }
      });
    }
    for (const nodeId of NODE_IDS) accepted(t, `node ${nodeId}`, ev({ nodeId }));
  });

  t.test('field types and lengths', async (t) => {
    violation(t, 'message empty', ev({ message: '' }));
    violation(t, 'message too long', ev({ message: 'm'.repeat(4097) }));
    violation(t, 'message not a string', ev({ message: 5 }));
    violation(t, 'nodeId null', ev({ nodeId: null }));
    violation(t, 'ts not a date-time', ev({ ts: 'yesterday' }));
    violation(t, 'ts a number', ev({ ts: 1700000000 }));
    violation(t, 'artifact empty', ev({ type: 'artifact.written', artifact: '' }));
    accepted(t, 'ts supplied', ev({ ts: '2025-01-02T03:04:05.000Z' }));
  });

  t.test('event id: non-empty, at most 512 characters', async (t) => {
    violation(t, 'id empty', ev({ id: '' }));
    violation(t, 'id of 513 characters', ev({ id: 'i'.repeat(513) }));
    violation(t, 'id not a string', ev({ id: 7 }));
    t.test('id of 512 characters accepted and kept exactly', async (t) => {
      const id = 'j'.repeat(512);
      const r = await post(ev({ id }));
      t.equal(r.status, 201);
      t.equal(r.body['event'].id, id);
    });
    t.test('id of 1 character accepted', async (t) => {
      t.equal((await post(ev({ id: 'k' }))).status, 201);
    });
  });

  t.test('unknown top-level fields', async (t) => {
    violation(t, 'one unknown field', ev({ color: 'red' }), ['color']);
    violation(t, 'two unknown fields', ev({ color: 'red', size: 1 }), ['color', 'size']);
    violation(t, 'a run-level field', ev({ title: 'x' }), ['title']);
    violation(t, 'seq supplied by the client', ev({ seq: 3 }), ['seq']);
    violation(t, 'claim supplied by the client', ev({ claim: { path: 'a', sha256: 'b' } }), ['claim']);
  });

  t.test('bodies that are not an object', async (t) => {
    for (const body of ['[]', '"node.entered"', '5', 'null', 'true', '[{"type":"node.entered"}]']) {
      violation(t, `body ${body}`, body);
    }
  });

  t.test('conditional fields (SPEC States and transitions)', async (t) => {
    violation(t, 'status skipped without skipReason', ev({ status: 'skipped' }), ['skipReason']);
    violation(t, 'nodeState skipped without skipReason', ev({ nodeState: 'skipped' }), ['skipReason']);
    violation(t, 'node.skipped without skipReason', ev({ type: 'node.skipped' }), ['skipReason']);
    // The type alone requires its reasons, whatever nodeState and status the event names.
    violation(
      t,
      'node.skipped naming another nodeState, without skipReason',
      ev({ type: 'node.skipped', nodeState: 'passed' }),
      ['skipReason'],
    );
    violation(
      t,
      'node.failed naming another nodeState, without reasons',
      ev({ type: 'node.failed', nodeState: 'active' }),
      ['failureReason', 'recoveryPath'],
    );
    violation(t, 'blank skipReason', ev({ type: 'node.skipped', status: 'skipped', skipReason: '  ' }), [
      'skipReason',
    ]);
    violation(t, 'status failed without reasons', ev({ status: 'failed' }), [
      'failureReason',
      'recoveryPath',
    ]);
    violation(t, 'status failed without recoveryPath', ev({ status: 'failed', failureReason: 'f' }), [
      'recoveryPath',
    ]);
    violation(t, 'status failed without failureReason', ev({ status: 'failed', recoveryPath: 'p' }), [
      'failureReason',
    ]);
    violation(t, 'nodeState failed without reasons', ev({ nodeState: 'failed' }), ['failureReason']);
    violation(t, 'node.failed without reasons', ev({ type: 'node.failed' }), [
      'failureReason',
      'recoveryPath',
    ]);
    violation(t, 'status needs_approval without owner and scope', ev({ status: 'needs_approval' }), [
      'approvalOwner',
      'approvalScope',
    ]);
    violation(
      t,
      'nodeState needs_approval without scope',
      ev({ nodeState: 'needs_approval', approvalOwner: 'o' }),
      ['approvalScope'],
    );
    violation(
      t,
      'approval.requested without owner',
      ev({ type: 'approval.requested', status: 'needs_approval', approvalScope: 's' }),
      ['approvalOwner'],
    );
    violation(
      t,
      'approval.requested with a status other than needs_approval',
      ev({ type: 'approval.requested', status: 'ok', approvalOwner: 'o', approvalScope: 's' }),
    );
    violation(t, 'artifact.written without artifact', ev({ type: 'artifact.written' }), ['artifact']);
    violation(
      t,
      'approval.granted by a non-human actor',
      ev({ type: 'approval.granted', approvalOwner: 'o', approvalScope: 's' }),
      ['human'],
    );

    accepted(
      t,
      'node.skipped with a reason',
      ev({ type: 'node.skipped', status: 'skipped', skipReason: 'n/a' }),
    );
    accepted(
      t,
      'node.failed with both reasons',
      ev({ type: 'node.failed', status: 'failed', failureReason: 'f', recoveryPath: 'p', nodeId: 'route' }),
    );
    accepted(
      t,
      'nodeState needs_approval with owner and scope',
      ev({
        nodeState: 'needs_approval',
        status: 'needs_approval',
        approvalOwner: 'o',
        approvalScope: 's2',
        nodeId: 'redzone',
      }),
    );
  });

  t.test('self-heal resolution events', async (t) => {
    violation(t, 'pr_opened without a URL', ev({ type: 'self_heal.pr_opened', nodeId: 'self-heal' }), [
      'selfHealPrUrl',
    ]);
    for (const url of [
      'http://github.com/o/r/pull/1',
      'https://github.com/o/r/issues/1',
      'https://github.com/o/r/pull/abc',
      'https://github.com/o/r/pull/12abc',
      'https://github.com/o/r/pull/',
      'https://user:pw@github.com/o/r/pull/1',
      'github.com/o/r/pull/1',
      'javascript:alert(1)//pull/1',
    ]) {
      violation(
        t,
        `pr_opened with ${url}`,
        ev({ type: 'self_heal.pr_opened', nodeId: 'self-heal', selfHealPrUrl: url }),
      );
    }
    violation(
      t,
      'pr_proposed with neither URL nor proposal',
      ev({ type: 'self_heal.pr_proposed', nodeId: 'self-heal' }),
    );
    accepted(
      t,
      'pr_opened with a pull request URL',
      ev({
        type: 'self_heal.pr_opened',
        nodeId: 'self-heal',
        selfHealPrUrl: 'https://github.com/o/r/pull/12',
      }),
    );
    accepted(
      t,
      'pr_proposed with a merge request URL',
      ev({
        type: 'self_heal.pr_proposed',
        nodeId: 'self-heal',
        selfHealPrUrl: 'https://gitlab.example/g/p/-/merge_requests/3',
      }),
    );
  });

  t.test('16 KiB body ceiling: 413 payload_too_large, declared or streamed', async (t) => {
    const padded = (size: number) => {
      const base = JSON.stringify(ev({ message: 'pad' }));
      return `${base.slice(0, -1)}${' '.repeat(size - base.length)}}`;
    };
    t.equal(Buffer.byteLength(padded(16 * 1024)), 16 * 1024);
    const token = b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!;
    const send = (body: string, chunked: boolean) => async () => {
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'x-harness-bridge-token': token,
      };
      if (chunked) headers['transfer-encoding'] = 'chunked';
      else headers['content-length'] = String(Buffer.byteLength(body));
      const r = await raw(b.url, { method: 'POST', path: `/runs/${RUN}/events`, headers, body });
      return { status: r.status, body: r.body, headers: r.headers };
    };
    await expectRejected(t, b, RUN, send(padded(16 * 1024 + 1), false), 413, 'payload_too_large');
    await expectRejected(t, b, RUN, send(padded(64 * 1024), true), 413, 'payload_too_large');
    await expectRejected(t, b, RUN, send(padded(1024 * 1024), false), 413, 'payload_too_large');
    const exact = await send(padded(16 * 1024), false)();
    t.equal(exact.status, 201, 'a body of exactly 16 KiB is accepted');
  });

  t.test('writes must be application/json: 415', async (t) => {
    const token = b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!;
    for (const type of [
      null,
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'text/json',
      'application/jsonp',
      'application/json-patch+json',
      'application/vnd.api+json',
    ]) {
      await expectRejected(
        t,
        b,
        RUN,
        async () => {
          const headers: Record<string, string> = { 'x-harness-bridge-token': token };
          if (type !== null) headers['content-type'] = type;
          const r = await raw(b.url, {
            method: 'POST',
            path: `/runs/${RUN}/events`,
            headers,
            body: JSON.stringify(ev()),
          });
          return { status: r.status, body: r.body, headers: r.headers };
        },
        415,
        'unsupported_media_type',
      );
    }
    for (const type of ['application/json; charset=utf-8', 'Application/JSON']) {
      const r = await post(JSON.stringify(ev()), { 'content-type': type });
      t.equal(r.status, 201, `${type} accepted`);
    }
  });

  t.test('malformed JSON: invalid_json with nothing echoed', async (t) => {
    const marker = 'ECHO-MARKER-7f3a';
    for (const body of [
      '{',
      `{"message":"${marker}`,
      `{"message":"${marker}",}`,
      `${marker}`,
      `{'message':'${marker}'}`,
      `{"message":"${marker}"}}`,
      '',
    ]) {
      const r = await expectRejected(t, b, RUN, () => post(body), 400, 'invalid_json');
      t.notOk(JSON.stringify(r.body).includes(marker), 'the body is not echoed');
      t.same(r.body['problems'], [], 'no parser detail');
    }
  });

  t.test('prototype poisoning is refused', async (t) => {
    const base = JSON.stringify(ev());
    for (const body of [
      `{"__proto__":{"isAdmin":true},${base.slice(1)}`,
      `{"constructor":{"prototype":{"isAdmin":true}},${base.slice(1)}`,
    ]) {
      const before = await b.journal(RUN);
      const r = await post(body);
      t.equal(r.status, 400, JSON.stringify(r.body));
      assertEnvelope(t, r.body);
      t.ok((await b.journal(RUN)).equals(before), 'journal bytes unchanged');
    }
  });

  t.test('non-canonical run IDs are refused, never mapped', async (t) => {
    const token = b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!;
    const runsBefore = (await b.req('GET', '/runs?limit=50')).headers.get('x-harness-page-total');
    for (const id of [
      '-x',
      '.x',
      '_x',
      'a'.repeat(129),
      'a%20b',
      'a%2Fb',
      '%2e%2e',
      'caf%C3%A9',
      'a%00b',
      'a:b',
    ]) {
      // Raw requests: a WHATWG URL client would resolve %2e%2e before sending it.
      const headers = { 'x-harness-bridge-token': token, 'content-type': 'application/json' };
      const r = await raw(b.url, {
        method: 'POST',
        path: `/runs/${id}/events`,
        headers,
        body: JSON.stringify(ev()),
      });
      t.equal(r.status, 400, `${id}: ${r.text}`);
      assertEnvelope(t, r.body, 'invalid_run_id');
      const g = await raw(b.url, { path: `/runs/${id}`, headers });
      t.equal(g.status, 400);
      assertEnvelope(t, g.body, 'invalid_run_id');
    }
    t.equal(
      (await b.req('GET', '/runs?limit=50')).headers.get('x-harness-page-total'),
      runsBefore,
      'no run was created',
    );
    t.equal(
      (await b.req('POST', `/runs/${'a'.repeat(128)}/events`, ev())).status,
      201,
      '128 characters is canonical',
    );
    // Case and punctuation are part of the identity: EC and ec are two runs.
    t.equal((await b.req('POST', '/runs/EC/events', ev())).status, 201);
    const upper = await b.req('GET', '/runs/EC');
    const lower = await b.req('GET', `/runs/${RUN}`);
    t.equal(upper.body['run'].eventCount, 1);
    t.not(lower.body['run'].eventCount, 1);
  });
});

t.test('runMode / eventSource table (SPEC What the service does 9)', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  for (const mode of RUN_MODES) {
    for (const source of EVENT_SOURCES) {
      const runId = `mode-${mode}-${source}`;
      const allowed = SOURCES_BY_MODE[mode].includes(source);
      const body = ev({ runMode: mode, eventSource: source });
      if (allowed) {
        const r = await b.req('POST', `/runs/${runId}/events`, body);
        t.equal(r.status, 201, `${mode}/${source} accepted`);
      } else {
        await expectRejected(
          t,
          b,
          runId,
          () => b.req('POST', `/runs/${runId}/events`, body),
          400,
          'event_contract_violation',
        );
        t.equal((await b.req('GET', `/runs/${runId}`)).status, 404, `${mode}/${source} created no run`);
      }
    }
  }
  // The table as the contract states it, so a change to SOURCES_BY_MODE cannot pass silently.
  t.same(SOURCES_BY_MODE, {
    blueprint: ['static-blueprint'],
    live: ['bridge', 'mcp', 'api', 'watched-artifact', 'browser-local'],
    replay: ['local-jsonl', 'database', 'run-packet'],
  });
});

t.test("a run's mode is fixed by run.mode_set, its first event or its creation", async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  t.equal((await b.req('POST', '/runs/m1/events', ev())).status, 201);
  const replay = { runMode: 'replay', eventSource: 'local-jsonl' };
  await expectRejected(
    t,
    b,
    'm1',
    () => b.req('POST', '/runs/m1/events', ev(replay)),
    409,
    'event_state_violation',
  );
  await expectRejected(
    t,
    b,
    'm1',
    () => b.req('POST', '/runs/m1/events', ev({ ...replay, type: 'run.mode_set' })),
    409,
    'event_state_violation',
  );

  t.equal((await b.req('POST', '/runs/m2/events', ev({ ...replay, type: 'run.mode_set' }))).status, 201);
  await expectRejected(
    t,
    b,
    'm2',
    () => b.req('POST', '/runs/m2/events', ev()),
    409,
    'event_state_violation',
  );
  t.equal((await b.req('POST', '/runs/m2/events', ev(replay))).status, 201);

  t.equal((await b.req('POST', '/runs', { id: 'm3', runMode: 'blueprint' })).status, 201);
  await expectRejected(
    t,
    b,
    'm3',
    () => b.req('POST', '/runs/m3/events', ev()),
    409,
    'event_state_violation',
  );
  const bp = await b.req(
    'POST',
    '/runs/m3/events',
    ev({ runMode: 'blueprint', eventSource: 'static-blueprint' }),
  );
  t.equal(bp.status, 201);

  // A run created without a mode takes the mode of its first event, and keeps it.
  t.equal((await b.req('POST', '/runs', { id: 'm4' })).status, 201);
  t.equal((await b.req('POST', '/runs/m4/events', ev())).status, 201);
  await expectRejected(
    t,
    b,
    'm4',
    () => b.req('POST', '/runs/m4/events', ev(replay)),
    409,
    'event_state_violation',
  );
  t.equal((await b.req('GET', '/runs/m4')).body['run'].runMode, 'live');
});
