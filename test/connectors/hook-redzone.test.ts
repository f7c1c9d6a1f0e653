import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { startTestBridge, type TestBridge } from '../helpers/bridge.js';
import {
  agentEnv,
  eventRows,
  GIT_PUSH_RULE,
  hookInProcess,
  sessionPayload,
  writeConnector,
} from '../helpers/hook.js';

/** Red Zone rules: what each kind of rule holds, what a denial and a wait do, and failing closed. */
async function rig(t: Test, redZone: Record<string, unknown>[]) {
  const b = await startTestBridge();
  t.teardown(() => b.close());
  await writeConnector(b.t.artifactRoot, { redZone });
  const call = async (name: string, over: Record<string, unknown> = {}, env = agentEnv(b)) =>
    hookInProcess(
      'claude-code',
      await sessionPayload('claude-code', name, b.t.artifactRoot, { session_id: 'rz', ...over }),
      env,
    );
  return { b, call, rows: () => eventRows(b, 'claude-code-rz') };
}

const human = (b: TestBridge, type: string, scope: string, extra: Record<string, unknown> = {}) =>
  b.req(
    'POST',
    '/runs/claude-code-rz/events',
    {
      type,
      actor: 'human',
      runMode: 'live',
      eventSource: 'api',
      nodeId: 'redzone',
      status: 'ok',
      message: 'decided',
      approvalOwner: 'release-manager',
      approvalScope: scope,
      ...extra,
    },
    { 'x-harness-human-token': b.t.env['HARNESS_HUMAN_APPROVAL_TOKEN']! },
  );
const scopeOf = (stderr: string | undefined) => /--scope (\S+) --grant/.exec(stderr ?? '')?.[1] ?? '';

t.test('a denied action stays blocked with the denial reason, and is not asked again', async (t) => {
  const { b, call, rows } = await rig(t, [GIT_PUSH_RULE]);
  const first = await call('PreToolUse.Bash');
  t.equal(first.exitCode, 2);
  const r = await human(b, 'approval.denied', scopeOf(first.stderr), {
    failureReason: 'no pushes on Friday',
    recoveryPath: 'open a pull request',
  });
  t.equal(r.status, 201, JSON.stringify(r.body));
  const before = await rows();
  const again = await call('PreToolUse.Bash');
  t.equal(again.exitCode, 2, 'still blocked');
  t.match(again.stderr, /denied .*no pushes on Friday; recovery: open a pull request/);
  t.same(await rows(), before, 'no new request after a denial');
});

t.test('with waitSeconds the call waits for the decision and goes through on a grant', async (t) => {
  const { b, call, rows } = await rig(t, [{ ...GIT_PUSH_RULE, waitSeconds: 20 }]);
  const began = Date.now();
  const pending = call('PreToolUse.Bash');
  let scope = '';
  for (let i = 0; i < 200 && scope === ''; i++) {
    await new Promise((r) => setTimeout(r, 50));
    const view = await b.req('GET', '/runs/claude-code-rz?eventLimit=1');
    scope = view.body['run']?.approvals?.[0]?.scope ?? '';
  }
  t.not(scope, '', 'the request reached the bridge while the hook waits');
  await human(b, 'approval.granted', scope);
  const answer = await pending;
  t.equal(answer.exitCode, 0, `granted while waiting: ${answer.stderr ?? ''}`);
  t.ok(Date.now() - began < 15_000, 'it did not wait out its whole bound');
  t.match((await rows()).at(-1), /^gate\.fired redzone passed/, 'the allowed action is recorded');
});

t.test('a path rule holds writes under its glob and only those', async (t) => {
  const { call, rows } = await rig(t, [{ path: 'infra/**', approvalOwner: 'ops', approvalScope: 'infra' }]);
  const outside = await call('PreToolUse.Write', { tool_input: { file_path: 'src/app.ts' } });
  t.equal(outside.exitCode, 0, 'a write elsewhere goes through');
  t.same(await rows(), ['404 run_not_found'], 'and contacts nobody');
  const inside = await call('PreToolUse.Write', { tool_input: { file_path: 'infra/prod/main.tf' } });
  t.equal(inside.exitCode, 2, 'a write under infra/ is held');
  t.match(inside.stderr, /a write to infra\/prod\/main\.tf/);
});

t.test('a tool rule holds that tool; each distinct input is its own request', async (t) => {
  const { call, rows } = await rig(t, [
    { tool: 'mcp__deploy__apply', approvalOwner: 'ops', approvalScope: 'deploy' },
  ]);
  const a = await call('PreToolUse.Bash', {
    tool_name: 'mcp__deploy__apply',
    tool_input: { env: 'staging' },
  });
  const b2 = await call('PreToolUse.Bash', {
    tool_name: 'mcp__deploy__apply',
    tool_input: { env: 'production' },
  });
  t.equal(a.exitCode, 2);
  t.equal(b2.exitCode, 2);
  t.not(scopeOf(a.stderr), scopeOf(b2.stderr), 'a grant of one cannot allow the other');
  t.equal((await rows()).filter((r) => r.startsWith('approval.requested')).length, 2);
});

t.test('an unreadable connector.json holds every tool call; other hooks only warn', async (t) => {
  const { b, call } = await rig(t, [GIT_PUSH_RULE]);
  await writeFile(
    join(b.t.artifactRoot, '.harness', 'connector.json'),
    '{"schema":"harness.connector.v1","redZone":[{"command":"("}]}',
  );
  const pre = await call('PreToolUse.Read');
  t.equal(pre.exitCode, 2, 'held: its rules cannot be checked');
  t.match(pre.stderr, /redZone\[0\]\.command is not a valid regular expression/);
  const post = await call('PostToolUse.Bash');
  t.equal(post.exitCode, 1, 'a warning, not a block');
});

t.test('without an access token a Red Zone call is blocked and telemetry waits in the outbox', async (t) => {
  const { b, call } = await rig(t, [GIT_PUSH_RULE]);
  const env = { ...agentEnv(b), HARNESS_BRIDGE_ACCESS_TOKEN: '' };
  const pre = await call('PreToolUse.Bash', {}, env);
  t.equal(pre.exitCode, 2);
  t.match(pre.stderr, /no access token/);
  const start = await call('SessionStart', {}, env);
  t.equal(start.exitCode, 1, 'a warning');
  t.match(start.stderr, /events wait in the outbox/);
});
