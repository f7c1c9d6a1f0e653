import { PassThrough } from 'node:stream';
import { Command, CommanderError } from 'commander';
import t, { type Test } from 'tap';
import { type ApproveOptions, approve, registerApprove } from '../../src/cli/approve.js';
import { UsageError } from '../../src/cli/env.js';
import { startRecordingUpstream } from '../helpers/recording-upstream.js';

const ACCESS = 'approve-test-access-token-0123456789abcdef';
const HUMAN = 'approve-test-human-token-0123456789abcdefgh';
const RUN = 'run-approve-1';
const pendingAt = '2026-11-20T10:00:00.000Z';
const approvals = [
  {
    nodeId: 'redzone',
    owner: 'sec',
    scope: 'deploy prod',
    status: 'pending',
    requestedSeq: 4,
    requestedAt: pendingAt,
    decidedSeq: null,
    decidedAt: null,
  },
  {
    nodeId: 'implement',
    owner: 'lead',
    scope: 'migration',
    status: 'granted',
    requestedSeq: 1,
    requestedAt: pendingAt,
    decidedSeq: 2,
    decidedAt: pendingAt,
  },
];

/** A recording bridge: the run read answers with `approvals`, the event post with `postStatus`. */
async function bridge(
  t: Test,
  opts: {
    runMode?: string;
    postStatus?: number;
    approvals?: typeof approvals;
    approvalsOmitted?: number;
    pendingApprovals?: number;
    /** Members that replace the run read's. */
    run?: Record<string, unknown>;
  } = {},
) {
  const posted: { body: Record<string, unknown>; headers: Record<string, unknown> }[] = [];
  const upstream = await startRecordingUpstream((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.method === 'GET') {
        res.end(
          JSON.stringify({
            ok: true,
            run: {
              id: RUN,
              status: 'running',
              runMode: opts.runMode ?? 'live',
              approvals: opts.approvals ?? approvals,
              approvalsOmitted: opts.approvalsOmitted ?? 0,
              pendingApprovals:
                opts.pendingApprovals ??
                (opts.approvals ?? approvals).filter((a) => a.status === 'pending').length,
              events: [],
              ...opts.run,
            },
          }),
        );
        return;
      }
      posted.push({ body: JSON.parse(raw), headers: req.headers });
      const status = opts.postStatus ?? 201;
      res.statusCode = status;
      res.end(
        JSON.stringify(
          status === 201
            ? { ok: true, seq: 5 }
            : {
                ok: false,
                error: 'human_approval_required',
                message: 'human token invalid',
                problems: ['x-harness-human-token does not match'],
              },
        ),
      );
    });
  });
  t.teardown(() => upstream.close());
  const env = {
    HARNESS_BRIDGE_URL: upstream.url.origin,
    HARNESS_BRIDGE_ACCESS_TOKEN: ACCESS,
    HARNESS_HUMAN_APPROVAL_TOKEN: HUMAN,
  };
  return { upstream, posted, env };
}

function io(env: NodeJS.ProcessEnv, opts: { tty?: boolean; answer?: string; argv?: string[] } = {}) {
  const stdin = Object.assign(new PassThrough(), { isTTY: opts.tty ?? false });
  if (opts.answer !== undefined) stdin.end(`${opts.answer}\n`);
  const out = { stdout: '', stderr: '' };
  const stdout = new PassThrough().on('data', (c) => (out.stdout += c));
  const stderr = new PassThrough().on('data', (c) => (out.stderr += c));
  return { io: { env, argv: opts.argv ?? [], stdin, stdout, stderr }, out };
}

const grant: ApproveOptions = { owner: 'sec', scope: 'deploy prod', grant: true, yes: true };

t.test('--grant --yes posts the exact human event with both tokens', async (t) => {
  const { upstream, posted, env } = await bridge(t);
  const { io: streams, out } = io(env);
  t.equal(await approve(RUN, grant, streams), 0);
  t.equal(upstream.received[0]?.url, `/runs/${RUN}?eventLimit=1`);
  t.equal(upstream.received[0]?.headers['x-harness-bridge-token'], ACCESS);
  t.equal(
    upstream.received[0]?.headers['x-harness-human-token'],
    undefined,
    'the read never carries the human token',
  );
  t.same(posted[0]?.body, {
    type: 'approval.granted',
    actor: 'human',
    runMode: 'live',
    eventSource: 'api',
    nodeId: 'redzone',
    message: 'granted by the operator with harness approve',
    status: 'ok',
    approvalOwner: 'sec',
    approvalScope: 'deploy prod',
  });
  t.equal(posted[0]?.headers['x-harness-bridge-token'], ACCESS);
  t.equal(posted[0]?.headers['x-harness-human-token'], HUMAN);
  t.match(
    out.stdout,
    /node: redzone[\s\S]*owner: sec[\s\S]*scope: deploy prod[\s\S]*requested at: 2026-11-20T10:00:00/,
  );
  t.notMatch(out.stdout + out.stderr, new RegExp(`${HUMAN}|${ACCESS}`), 'no credential is printed');
});

const failed = { failureReason: 'the change window is closed', recoveryPath: 'deploy on Monday' };

t.test('--deny records status blocked with the reason; a replay run uses a replay source', async (t) => {
  const { posted, env } = await bridge(t, { runMode: 'replay' });
  const deny = {
    owner: 'sec',
    scope: 'deploy prod',
    deny: true,
    yes: true,
    reason: 'not this week',
    ...failed,
  };
  t.equal(await approve(RUN, deny, io(env).io), 0);
  t.match(posted[0]?.body, {
    type: 'approval.denied',
    status: 'blocked',
    message: 'not this week',
    runMode: 'replay',
    eventSource: 'local-jsonl',
    ...failed,
  });
});

t.test(
  'a denial carries a failure reason and a recovery path: options, or asked on a terminal',
  async (t) => {
    const { upstream, posted, env } = await bridge(t);
    const deny = { owner: 'sec', scope: 'deploy prod', deny: true, yes: true };
    // With --yes nothing can be asked: a missing or blank one is a usage error before any request.
    for (const over of [{}, { failureReason: failed.failureReason }, { ...failed, recoveryPath: '  ' }]) {
      await t.rejects(
        approve(RUN, { ...deny, ...over }, io(env).io),
        /--deny needs --failure-reason and --recovery-path/,
        JSON.stringify(over),
      );
    }
    // A grant does not fail its node: the two options are refused with it.
    await t.rejects(approve(RUN, { ...grant, ...failed }, io(env).io), /go with --deny/);
    t.equal(upstream.received.length, 0, 'no request was made');

    // On a terminal the missing ones are asked, in order, before the confirmation.
    const asked = io(env, { tty: true, answer: `${failed.recoveryPath}\ny` });
    t.equal(await approve(RUN, { ...deny, yes: false, failureReason: failed.failureReason }, asked.io), 0);
    t.match(posted[0]?.body, { type: 'approval.denied', ...failed });
    t.match(asked.out.stdout, /Recovery path[^\n]*: [\s\S]*Deny this approval\? \[y\/N\]/);
    t.notMatch(asked.out.stdout, /Failure reason \(/, 'a reason given as an option is not asked');
    const both = io(env, { tty: true, answer: `${failed.failureReason}\n${failed.recoveryPath}\nyes` });
    t.equal(await approve(RUN, { ...deny, yes: false }, both.io), 0);
    t.match(posted[1]?.body, failed);

    // A blank answer, or one carrying a credential, sends nothing.
    const blank = io(env, { tty: true, answer: `\n${failed.recoveryPath}\ny` });
    t.equal(await approve(RUN, { ...deny, yes: false }, blank.io), 1);
    t.match(blank.out.stderr, /a denial needs a failure reason and a recovery path; nothing was sent/);
    const leaky = io(env, { tty: true, answer: `see ${HUMAN}\n${failed.recoveryPath}\ny` });
    await t.rejects(
      approve(RUN, { ...deny, yes: false }, leaky.io),
      /an answer carries the value of HARNESS_HUMAN/,
    );
    t.equal(posted.length, 2, 'neither was sent');
  },
);

t.test('confirmation: a TTY answer decides; no TTY and no --yes is a usage error', async (t) => {
  const { upstream, posted, env } = await bridge(t);
  const ask = { ...grant, yes: false };
  t.equal(await approve(RUN, ask, io(env, { tty: true, answer: 'n' }).io), 1);
  t.equal(posted.length, 0, 'a refusal sends nothing');
  const before = upstream.received.length;
  await t.rejects(approve(RUN, ask, io(env, { tty: false }).io), UsageError);
  t.equal(upstream.received.length, before, 'no TTY is refused before any request');
  t.equal(await approve(RUN, ask, io(env, { tty: true, answer: 'yes' }).io), 0);
  t.equal(posted.length, 1);
});

t.test('confirmation takes y or yes alone, in any case: any other answer sends nothing', async (t) => {
  const { posted, env } = await bridge(t);
  const ask = { ...grant, yes: false };
  // Starting with y, or holding yes, is not saying yes.
  for (const answer of ['yesterday', 'yeah', 'y es', 'ny', 'nyes', 'no', '']) {
    const refused = io(env, { tty: true, answer });
    t.equal(await approve(RUN, ask, refused.io), 1, JSON.stringify(answer));
    t.match(refused.out.stderr, /not confirmed; nothing was sent/, JSON.stringify(answer));
  }
  t.equal(posted.length, 0, 'no answer but y or yes sent a decision');
  for (const answer of ['y', 'Y', 'yes', 'YES', ' Yes ']) {
    t.equal(await approve(RUN, ask, io(env, { tty: true, answer }).io), 0, JSON.stringify(answer));
  }
  t.equal(posted.length, 5, 'each y or yes sent one');
});

t.test('--node must be one of the node IDs: a usage error before any request', async (t) => {
  const { upstream, posted, env } = await bridge(t);
  // An empty --node would otherwise match every node: here, the pending redzone approval.
  for (const node of ['', 'red-zone', 'Redzone', '../redzone']) {
    await t.rejects(
      approve(RUN, { ...grant, node }, io(env).io),
      { constructor: UsageError, message: /^--node must be one of intake, / },
      JSON.stringify(node),
    );
  }
  t.equal(upstream.received.length, 0, 'no request was made');
  t.equal(await approve(RUN, { ...grant, node: 'redzone' }, io(env).io), 0, 'a node ID is taken');
  t.equal(posted.length, 1);
});

t.test('credentials come from the environment only; usage errors precede any request', async (t) => {
  const { upstream, env } = await bridge(t);
  await t.rejects(
    approve(RUN, { ...grant, reason: HUMAN }, io(env, { argv: ['--reason', HUMAN] }).io),
    UsageError,
  );
  await t.rejects(approve(RUN, grant, io(env, { argv: [`--x=${ACCESS}`] }).io), UsageError);
  const { HARNESS_HUMAN_APPROVAL_TOKEN: _h, ...noHuman } = env;
  await t.rejects(approve(RUN, grant, io(noHuman).io), /HARNESS_HUMAN_APPROVAL_TOKEN/);
  const { HARNESS_BRIDGE_ACCESS_TOKEN: _a, ...noAccess } = env;
  await t.rejects(approve(RUN, grant, io(noAccess).io), /HARNESS_BRIDGE_ACCESS_TOKEN/);
  await t.rejects(approve(RUN, { ...grant, deny: true }, io(env).io), /exactly one of --grant or --deny/);
  await t.rejects(approve(RUN, { owner: 'sec', scope: 'deploy prod', yes: true }, io(env).io), UsageError);
  await t.rejects(approve('../health', grant, io(env).io), /not canonical/);
  t.equal(upstream.received.length, 0, 'no request was made');

  const program = new Command('harness').exitOverride().configureOutput({ writeErr: () => {} });
  registerApprove(program);
  for (const flag of ['--human-token', '--token', '--access-token']) {
    await t.rejects(
      program.parseAsync(['approve', RUN, '--owner', 'sec', '--scope', 's', '--grant', flag, 'x'], {
        from: 'user',
      }),
      CommanderError,
      flag,
    );
  }
  t.equal(upstream.received.length, 0, 'a token-looking option never reaches the bridge');
});

t.test('no matching pending approval, or a bridge refusal, exits 1 with the code and problems', async (t) => {
  const { posted, env } = await bridge(t, { postStatus: 403 });
  const none = io(env);
  t.equal(await approve(RUN, { ...grant, scope: 'other' }, none.io), 1);
  t.match(none.out.stderr, /no pending approval[\s\S]*node: redzone/);
  t.equal(
    await approve(RUN, { ...grant, owner: 'lead', scope: 'migration' }, io(env).io),
    1,
    'a decided approval is not pending',
  );
  t.equal(posted.length, 0);
  const refused = io(env);
  t.equal(await approve(RUN, grant, refused.io), 1);
  t.match(
    refused.out.stderr,
    /human_approval_required: human token invalid\n\s+- x-harness-human-token does not match/,
  );
});

t.test('agent-chosen owners and scopes reach the terminal without control characters', async (t) => {
  const hostile = [
    { ...approvals[0]!, owner: 'sec\u001b[2J\u001b[1;1Hall clear', scope: 'deploy\u202e dorp\r\nfake line' },
  ];
  const { posted, env } = await bridge(t, { approvals: hostile });
  const none = io(env);
  t.equal(await approve(RUN, { ...grant, scope: 'other' }, none.io), 1);
  t.notOk(
    /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e]/.test(none.out.stderr),
    'no raw control character',
  );
  t.match(none.out.stderr, /owner: sec\\u\{1b\}\[2J\\u\{1b\}\[1;1Hall clear/, 'shown as visible escapes');
  t.match(none.out.stderr, /scope: deploy\\u\{202e\} dorp\\u\{d\}\\u\{a\}fake line/);
  t.equal(posted.length, 0);
});

t.test('a quarantined run: its reasons, escaped, instead of a missing approval; exit 1', async (t) => {
  const reasons = ['journal record 3 failed authentication', 'evil\u001b[2J\r\nall clear\u202e'];
  const quarantined = {
    status: 'quarantined',
    approvals: undefined,
    quarantine: { reasons, since: pendingAt },
  };
  const { posted, env } = await bridge(t, { run: quarantined });
  const got = io(env);
  t.equal(await approve(RUN, grant, got.io), 1);
  t.equal(
    got.out.stderr,
    `harness approve: run ${RUN} is quarantined and accepts no approval decision\n` +
      '  quarantined: journal record 3 failed authentication\n' +
      '  quarantined: evil\\u{1b}[2J\\u{d}\\u{a}all clear\\u{202e}\n',
  );
  t.notMatch(got.out.stderr, /no pending approval/);
  t.equal(got.out.stdout, '');
  t.equal(posted.length, 0, 'nothing is posted');
});

t.test('an approval the run view left out is named as such: exit 1, nothing posted', async (t) => {
  const { posted, env } = await bridge(t, { approvalsOmitted: 9, pendingApprovals: 8 });
  const hidden = io(env);
  t.equal(await approve(RUN, { ...grant, scope: 'newer' }, hidden.io), 1);
  t.match(
    hidden.out.stderr,
    /7 pending approvals are not in the run view: decide the older pending ones first/,
  );
  t.equal(posted.length, 0);
  // Only decided approvals left out: nothing pending is hidden, so no such hint.
  const decidedOnly = await bridge(t, { approvalsOmitted: 9, pendingApprovals: 1 });
  const none = io(decidedOnly.env);
  t.equal(await approve(RUN, { ...grant, scope: 'newer' }, none.io), 1);
  t.notMatch(none.out.stderr, /not in the run view/);
  t.equal(decidedOnly.posted.length, 0);
});

t.test('an unreachable bridge exits 1', async (t) => {
  const { upstream, env } = await bridge(t);
  await upstream.close();
  const down = io(env);
  t.equal(await approve(RUN, grant, down.io), 1);
  t.match(down.out.stderr, /cannot reach the bridge/);
});

t.test(
  'a wrong --owner with the scope of a pending approval matches nothing: exit 1, nothing posted',
  async (t) => {
    const { upstream, posted, env } = await bridge(t);
    const wrong = io(env);
    t.equal(await approve(RUN, { ...grant, owner: 'lead' }, wrong.io), 1);
    t.match(wrong.out.stderr, /no pending approval with this owner and scope/);
    t.equal(posted.length, 0, 'no decision was posted');
    t.same(
      upstream.received.map((r) => r.method),
      ['GET'],
      'only the run read reached the bridge',
    );
  },
);

t.test('several pending approvals for one owner and scope need --node', async (t) => {
  const twin = { ...(approvals[0] as (typeof approvals)[number]), nodeId: 'implement', requestedSeq: 6 };
  const { upstream, posted, env } = await bridge(t, { approvals: [...approvals, twin] });
  await t.rejects(
    approve(RUN, grant, io(env).io),
    { constructor: UsageError, message: /add --node \(redzone, implement\)/ },
    'a usage error naming both nodes',
  );
  t.equal(posted.length, 0, 'nothing was posted');
  t.same(
    upstream.received.map((r) => r.method),
    ['GET'],
  );
  t.equal(await approve(RUN, { ...grant, node: 'implement' }, io(env).io), 0);
  t.equal(posted.length, 1);
  t.equal(posted[0]?.body['nodeId'], 'implement', '--node picks the approval');
});

t.test('a redirect is never followed: exit 1 and the redirect target gets no request', async (t) => {
  const target = await bridge(t);
  const redirector = await startRecordingUpstream((req, res) => {
    res.writeHead(302, { location: new URL(req.url ?? '/', target.upstream.url).href });
    res.end();
  });
  t.teardown(() => redirector.close());
  const env = { ...target.env, HARNESS_BRIDGE_URL: redirector.url.origin };
  const redirected = io(env);
  t.equal(await approve(RUN, grant, redirected.io), 1);
  t.equal(redirector.received.length, 1, 'the redirecting bridge got the run read');
  t.equal(target.upstream.received.length, 0, 'the redirect target never got a request (nor a token)');
  t.equal(target.posted.length, 0);
  t.notMatch(redirected.out.stdout + redirected.out.stderr, new RegExp(`${HUMAN}|${ACCESS}`));
});
