import { networkInterfaces } from 'node:os';
import t from 'tap';
import { cleanup, startTestBridge } from '../helpers/bridge.js';
import { bridgeClientEnv, expectRefused, runCli } from '../helpers/cli.js';
import { json } from '../helpers/recording-upstream.js';
import {
  events,
  newRun,
  PAGE,
  pageEv,
  pageRequest,
  postFrom,
  postWithHost,
  startRelayCli,
  startStubbedRelay,
} from '../helpers/relay.js';

/**
 * `harness browser-relay` (docs/sources.md): pages of the allowed origins post through the
 * capability URL, events land live / browser-local; every refusal leaves the journal unchanged.
 */

const OTHER = 'http://localhost:5174';

t.test('harness browser-relay on one bridge', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const env = bridgeClientEnv(b);
  await newRun(b, 'r-main');
  const relay = await startRelayCli(t, env, 'r-main', [PAGE, 'https://app.test:8443']);
  t.match(relay.url, /^http:\/\/127\.0\.0\.1:\d+\/e\/[A-Za-z0-9_-]{43}$/, 'the capability URL');
  t.same(relay.records[0], { relay: relay.url, runId: 'r-main', origins: [PAGE, 'https://app.test:8443'] });

  t.test('a page of an allowed origin posts; the event is live, browser-local', async (t) => {
    const r = await postFrom(PAGE, relay.url, pageEv());
    t.equal(r.status, 201, JSON.stringify(r.body));
    t.equal(r.headers.get('access-control-allow-origin'), PAGE);
    t.equal(r.body['ok'], true);
    t.equal(typeof r.body['seq'], 'number');
    t.match(r.body['id'], /^browser-/, 'an id is made when the page gives none');
    t.notOk('run' in r.body, "the run's summary is not handed to the page");
    const stored = (await events(b, 'r-main')).at(-1)!;
    t.match(stored, { id: r.body['id'], runMode: 'live', eventSource: 'browser-local', type: 'gate.fired' });

    const again = {
      ...pageEv({ id: 'browser-page-1', message: 'explicit' }),
      runMode: 'live',
      eventSource: 'browser-local',
    };
    const first = await pageRequest(relay.url, again, {
      origin: 'https://app.test:8443',
      'content-type': 'application/json',
    });
    t.equal(first.status, 201, 'runMode live and eventSource browser-local may be given');
    const repeat = await postFrom(PAGE, relay.url, again);
    t.same([repeat.status, repeat.body['duplicate'], repeat.body['seq']], [200, true, first.body['seq']]);
    const conflict = await postFrom(PAGE, relay.url, { ...again, message: 'other' });
    t.same(
      conflict.body,
      { ok: false, error: 'event_id_conflict', message: conflict.body['message'] },
      "the bridge's refusal, without its problems: the page learns nothing of the stored event",
    );
    t.equal(conflict.status, 409);
    t.equal(conflict.headers.get('access-control-allow-origin'), PAGE, 'the page can read it');
  });

  t.test(
    "a run.completed the finish line refuses: the page learns the refusal, not the gate's problems",
    async (t) => {
      const r = await postFrom(
        PAGE,
        relay.url,
        pageEv({ type: 'run.completed', nodeId: 'handoff', status: 'passed', message: 'done' }),
      );
      t.equal(r.status, 409);
      t.same(r.body, { ok: false, error: 'finish_line_blocked', message: r.body['message'] });
      t.match(
        (await events(b, 'r-main')).at(-1),
        { type: 'run.blocked', actor: 'system' },
        'the bridge refused it',
      );
    },
  );

  t.test('it listens on 127.0.0.1 only', async (t) => {
    const address = Object.values(networkInterfaces())
      .flat()
      .find((a) => a !== undefined && a.family === 'IPv4' && !a.internal)?.address;
    if (address === undefined) {
      t.comment('the machine has no other IPv4 address: nothing to try');
      return;
    }
    const elsewhere = new URL(relay.url);
    elsewhere.hostname = address;
    const r = await postFrom(PAGE, elsewhere.href, pageEv()).catch((err: Error) => err);
    t.ok(r instanceof Error, `nothing answers on ${address}`);
  });

  t.test('CORS preflight: only for an allowed origin on the capability path', async (t) => {
    const pre = (url: string, origin: string) =>
      pageRequest(
        url,
        undefined,
        {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type',
        },
        'OPTIONS',
      );
    const ok = await pre(relay.url, PAGE);
    t.equal(ok.status, 204);
    t.equal(ok.headers.get('access-control-allow-origin'), PAGE);
    t.equal(ok.headers.get('access-control-allow-methods'), 'POST');
    t.equal(ok.headers.get('access-control-allow-headers'), 'content-type');
    // Another capability: the last character changed (to one it is not: it is 'A' one time in 16).
    const wrong = relay.url.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'));
    t.not(wrong, relay.url);
    for (const [url, origin, status] of [
      [relay.url, OTHER, 403],
      [relay.url, 'null', 403],
      [wrong, PAGE, 404],
      [new URL('/', relay.url).href, PAGE, 404],
    ] as const) {
      const r = await pre(url, origin);
      t.equal(r.status, status, `${origin} ${url}`);
      t.equal(r.headers.get('access-control-allow-origin'), null, 'no CORS header');
      t.equal(r.headers.get('access-control-allow-methods'), null);
    }
  });

  t.test('refusals: each answered with its code, nothing posted', async (t) => {
    const before = await b.journal('r-main');
    const json = { 'content-type': 'application/json' };
    const cases: [
      string,
      () => Promise<{ status: number; body: Record<string, any>; headers: Headers }>,
      number,
      string,
      boolean,
    ][] = [
      ['another origin', () => postFrom(OTHER, relay.url, pageEv()), 403, 'origin_not_allowed', false],
      [
        'another origin, oversize: refused before its body is read',
        () => postFrom(OTHER, relay.url, pageEv({ message: 'x'.repeat(17_000) })),
        403,
        'origin_not_allowed',
        false,
      ],
      ['no origin', () => pageRequest(relay.url, pageEv(), json), 403, 'origin_not_allowed', false],
      [
        'an origin with a path',
        () => postFrom(`${PAGE}/`, relay.url, pageEv()),
        403,
        'origin_not_allowed',
        false,
      ],
      [
        'a wrong capability',
        () => postFrom(PAGE, `${relay.url.slice(0, -2)}xx`, pageEv()),
        404,
        'not_found',
        false,
      ],
      [
        'no capability',
        () => postFrom(PAGE, new URL('/e/', relay.url).href, pageEv()),
        404,
        'not_found',
        false,
      ],
      [
        'a GET of the capability',
        () => pageRequest(relay.url, undefined, { origin: PAGE }, 'GET'),
        404,
        'not_found',
        false,
      ],
      [
        'another Host',
        () => postWithHost(relay.url, `evil.test:${new URL(relay.url).port}`, PAGE, pageEv()),
        403,
        'host_not_allowed',
        false,
      ],
      [
        'oversize',
        () => postFrom(PAGE, relay.url, pageEv({ message: 'x'.repeat(17_000) })),
        413,
        'payload_too_large',
        true,
      ],
      [
        'not JSON',
        () => pageRequest(relay.url, '{"type":', { ...json, origin: PAGE }),
        400,
        'invalid_json',
        true,
      ],
      [
        'text/plain',
        () =>
          pageRequest(relay.url, JSON.stringify(pageEv()), { 'content-type': 'text/plain', origin: PAGE }),
        415,
        'unsupported_media_type',
        true,
      ],
      [
        'actor human',
        () => postFrom(PAGE, relay.url, pageEv({ actor: 'human' })),
        400,
        'event_contract_violation',
        true,
      ],
      [
        'approval.granted',
        () =>
          postFrom(
            PAGE,
            relay.url,
            pageEv({ type: 'approval.granted', actor: 'runtime-a', approvalOwner: 'o', approvalScope: 's' }),
          ),
        403,
        'human_approval_required',
        true,
      ],
      [
        'approval.denied',
        () =>
          postFrom(
            PAGE,
            relay.url,
            pageEv({ type: 'approval.denied', actor: 'human', approvalOwner: 'o', approvalScope: 's' }),
          ),
        403,
        'human_approval_required',
        true,
      ],
      [
        'runMode replay',
        () => postFrom(PAGE, relay.url, pageEv({ runMode: 'replay' })),
        400,
        'event_contract_violation',
        true,
      ],
      [
        'eventSource api',
        () => postFrom(PAGE, relay.url, pageEv({ eventSource: 'api' })),
        400,
        'event_contract_violation',
        true,
      ],
      [
        'an artifact root',
        () => postFrom(PAGE, relay.url, pageEv({ artifactRoot: '/tmp' })),
        400,
        'event_contract_violation',
        true,
      ],
      [
        'an adapter',
        () => postFrom(PAGE, relay.url, pageEv({ adapterPath: 'adapter.json' })),
        400,
        'event_contract_violation',
        true,
      ],
      [
        "an id without the page's prefix",
        () => postFrom(PAGE, relay.url, pageEv({ id: 'agent-hook-1' })),
        400,
        'event_contract_violation',
        true,
      ],
      [
        'no message',
        () => postFrom(PAGE, relay.url, pageEv({ message: undefined })),
        400,
        'event_contract_violation',
        true,
      ],
      [
        'an unknown node',
        () => postFrom(PAGE, relay.url, pageEv({ nodeId: 'elsewhere' })),
        400,
        'event_contract_violation',
        true,
      ],
      [
        'a failure without its reasons',
        () => postFrom(PAGE, relay.url, pageEv({ type: 'node.failed', status: 'failed' })),
        400,
        'event_contract_violation',
        true,
      ],
      ['an array', () => postFrom(PAGE, relay.url, [pageEv()]), 400, 'event_contract_violation', true],
    ];
    for (const [what, request, status, code, cors] of cases) {
      const r = await request();
      t.same([r.status, r.body['error']], [status, code], `${what}: ${JSON.stringify(r.body)}`);
      t.equal(r.headers.get('access-control-allow-origin'), cors ? PAGE : null, `${what}: CORS header`);
    }
    const probe = await postFrom(PAGE, relay.url, pageEv({ id: 'page-1', message: 'other' }));
    t.same(
      probe.body['problems'],
      ["/id must start with browser- (or be left out): the agent's ids are not a page's"],
      'an id the agent could use is refused before the bridge compares it',
    );
    const mode = await postFrom(PAGE, relay.url, pageEv({ runMode: 'replay', message: '' }));
    t.ok(mode.body['problems'].length >= 2, `every problem at once: ${mode.body['problems']}`);
    t.same(await b.journal('r-main'), before, 'the journal is byte-for-byte unchanged');
  });

  t.test('SIGINT stops it: exit 0 and a summary', async (t) => {
    t.equal(await relay.stop('SIGINT'), 0, relay.stderr());
    t.match(relay.records.at(-1), { runId: 'r-main', delivered: 3, refused: 2, queued: 0, waiting: 0 });
  });
});

t.test('start: refusals exit 2 or 1 with one line, nothing posted', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const env = bridgeClientEnv(b);
  await newRun(b, 'r-start');
  // A relay that does not refuse runs until stopped: killed at 20 s, it fails here.
  const refusal = (args: string[], e = env) => runCli(['browser-relay', ...args], e, undefined, 20_000);
  const before = await b.journal('r-start');
  expectRefused(t, await refusal(['r-start']), 'at least one --origin');
  for (const bad of [
    'localhost:5173',
    'http://localhost:5173/',
    'http://LOCALHOST:5173',
    'http://localhost:80',
    'ftp://x.test',
    'null',
    'http://a@x.test',
  ])
    expectRefused(t, await refusal(['r-start', '--origin', bad]), `--origin ${bad} is not an origin`);
  expectRefused(t, await refusal(['r-start', '--origin', PAGE, '--port', '70000']), '--port');
  expectRefused(t, await refusal(['../x', '--origin', PAGE]), 'not canonical');
  expectRefused(
    t,
    await refusal(['r-start', '--origin', PAGE], { ...env, HARNESS_HUMAN_APPROVAL_TOKEN: 'h'.repeat(40) }),
    'HARNESS_HUMAN_APPROVAL_TOKEN',
  );
  expectRefused(
    t,
    await refusal(['r-start', '--origin', PAGE], { ...env, HARNESS_BRIDGE_INTEGRITY_KEY: 'k'.repeat(40) }),
    'HARNESS_BRIDGE_INTEGRITY_KEY',
  );
  expectRefused(
    t,
    await refusal(['r-start', '--origin', PAGE], { ...env, HARNESS_BRIDGE_EXPORT_KEY: 'k'.repeat(40) }),
    'HARNESS_BRIDGE_EXPORT_KEY',
  );
  const { HARNESS_BRIDGE_ACCESS_TOKEN: _token, ...noToken } = env;
  expectRefused(t, await refusal(['r-start', '--origin', PAGE], noToken), 'HARNESS_BRIDGE_ACCESS_TOKEN');
  const missing = await refusal(['r-nothing', '--origin', PAGE]);
  t.equal(missing.exitCode, 1, missing.stderr);
  t.match(missing.stderr, /run_not_found/);
  t.equal((await b.req('GET', '/runs/r-nothing')).status, 404, 'no run was created');
  t.equal(
    (await b.req('POST', '/runs', { id: 'r-replay', runMode: 'replay', eventSource: 'local-jsonl' })).status,
    201,
  );
  expectRefused(t, await refusal(['r-replay', '--origin', PAGE]), 'replay run');
  t.same(await b.journal('r-start'), before, 'the run is byte-for-byte unchanged');
  t.equal((await b.journal('r-replay')).length, 0, 'nothing was posted to the replay run');
});

t.test('refused at the relay: nothing reaches the bridge, and each rule says why', async (t) => {
  const { upstream, relay } = await startStubbedRelay(t, 'r-stub', (_req, res) =>
    json(201, { ok: true, seq: 7, event: {}, run: {} })(_req, res),
  );
  const posts = () => upstream.received.filter((r) => r.method === 'POST').length;
  const refusals: [Record<string, unknown>, number, string, string][] = [
    [{ actor: 'human' }, 400, 'event_contract_violation', 'never the human'],
    [{ runMode: 'replay' }, 400, 'event_contract_violation', 'runMode must be live'],
    [{ eventSource: 'api' }, 400, 'event_contract_violation', 'eventSource must be browser-local'],
    [{ artifactRoot: '/tmp' }, 400, 'event_contract_violation', 'artifactRoot is refused'],
    [{ adapterPath: 'a.json' }, 400, 'event_contract_violation', 'adapterPath is refused'],
    [{ id: 'run-1-hook-1' }, 400, 'event_contract_violation', '/id must start with browser-'],
    [{ message: undefined }, 400, 'event_contract_violation', 'message'],
    [{ nodeId: 'elsewhere' }, 400, 'event_contract_violation', '/nodeId'],
    [{ type: 'node.failed', status: 'failed' }, 400, 'event_contract_violation', 'failureReason is required'],
    [{ extra: 1 }, 400, 'event_contract_violation', 'additional'],
    // Judged as the page sent it (the route's schema), not as the relay would fill it in.
    [{ id: 5 }, 400, 'event_contract_violation', '/id'],
    [{ message: 'x'.repeat(4097) }, 400, 'event_contract_violation', '/message'],
    [
      { type: 'approval.granted', actor: 'runtime-a', approvalOwner: 'o', approvalScope: 's' },
      403,
      'human_approval_required',
      '',
    ],
    [
      { type: 'approval.denied', actor: 'runtime-a', approvalOwner: 'o', approvalScope: 's' },
      403,
      'human_approval_required',
      '',
    ],
  ];
  for (const [over, status, code, fragment] of refusals) {
    const r = await postFrom(PAGE, relay.url, pageEv(over));
    t.same([r.status, r.body['error']], [status, code], `${JSON.stringify(over)}: ${JSON.stringify(r.body)}`);
    t.ok(
      fragment === '' || r.body['problems'].some((p: string) => p.includes(fragment)),
      `${fragment}: ${r.body['problems']}`,
    );
  }
  t.equal(posts(), 0, 'nothing was posted to the bridge');
  const ok = await postFrom(PAGE, relay.url, pageEv());
  t.same([ok.status, ok.body], [201, { ok: true, id: ok.body['id'], seq: 7 }], 'only the seq and id');
  t.equal(posts(), 1, 'a good event is posted once');
  const sent = upstream.received.find((r) => r.method === 'POST')!;
  t.equal(sent.url, '/runs/r-stub/events');
  t.equal(sent.headers['x-harness-bridge-token'], 'a'.repeat(43));
  t.equal(await relay.stop(), 0);
});
