import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { startTestBridge } from './helpers/bridge.js';
import { agentEnv, eventRows, fixture, GIT_PUSH_RULE, runHookCli, writeConnector } from './helpers/hook.js';
import { CLI } from './helpers/paths.js';

/**
 * Each runtime, driven by its documented payloads against a real bridge with the real finish-line
 * gate: session start, a Red Zone command blocked until a human grants it in the approval shell,
 * artifacts written through a file tool and through a shell command, a stop refused with the
 * problems, then completed once the artifacts exist. The journal is checked event by event.
 */
const SESSIONS = {
  'claude-code': {
    actor: 'runtime-a',
    start: 'SessionStart',
    shell: 'PreToolUse.Bash',
    afterShell: 'PostToolUse.Bash',
    write: 'PostToolUse.Write',
    stop: 'Stop',
    deny: 'block',
  },
  codex: {
    actor: 'runtime-b',
    start: 'SessionStart',
    shell: 'PreToolUse.Bash',
    afterShell: 'PostToolUse.Bash',
    write: 'PostToolUse.apply_patch',
    stop: 'Stop',
    deny: 'block',
  },
  gemini: {
    actor: 'runtime-c',
    start: 'SessionStart',
    shell: 'BeforeTool.run_shell_command',
    afterShell: 'AfterTool.run_shell_command',
    write: 'AfterTool.write_file',
    stop: 'AfterAgent',
    deny: 'deny',
  },
} as const;

const run = promisify(execFile);

for (const [runtime, s] of Object.entries(SESSIONS)) {
  t.test(`${runtime}: a session from start to a completed finish line`, async (t) => {
    const b = await startTestBridge(undefined, { realGate: true });
    t.teardown(() => b.close());
    const project = b.t.artifactRoot;
    await writeConnector(project, { stopGate: true, redZone: [GIT_PUSH_RULE] });
    await writeFile(
      join(project, 'project-adapter.json'),
      JSON.stringify({ runtime: { requiredNodes: ['intake', 'prove', 'handoff'] } }),
    );
    const env = agentEnv(b);
    const session = `sess-${runtime}`;
    const runId = `${runtime}-${session}`;
    const hook = async (name: string, over: Record<string, unknown> = {}) =>
      runHookCli(runtime, await fixture(runtime, name, { session_id: session, cwd: project, ...over }), env);
    const rows: string[] = [];
    const expectRows = async (added: string[], what: string) => {
      rows.push(...added.map((r) => r.replace('$actor', s.actor)));
      t.same(await eventRows(b, runId), rows, what);
    };

    let r = await hook(s.start);
    t.equal(r.code, 0, r.stderr);
    t.equal(r.stdout, '', 'nothing on stdout but an answer');
    await expectRows(['agent.connected intake ok $actor', 'node.entered intake ok $actor'], 'session start');

    const push = { tool_input: { command: 'git push origin main' } };
    r = await hook(s.shell, push);
    t.equal(r.code, 2, 'the Red Zone command is blocked');
    const grant = /harness approve (\S+) --owner (\S+) --scope (\S+) --grant/.exec(r.stderr);
    t.ok(grant, `the block names the approve command: ${r.stderr}`);
    await expectRows(['approval.requested redzone needs_approval $actor'], 'one approval requested');
    r = await hook(s.shell, push);
    t.equal(r.code, 2, 'still blocked while pending');
    await expectRows([], 'a retry asks nothing new');

    // The human, in the approval shell (access and human tokens), runs the command the block named.
    const approveEnv = { ...env, HARNESS_HUMAN_APPROVAL_TOKEN: b.t.env['HARNESS_HUMAN_APPROVAL_TOKEN']! };
    await run(
      process.execPath,
      [CLI, 'approve', grant![1]!, '--owner', grant![2]!, '--scope', grant![3]!, '--grant', '--yes'],
      { env: approveEnv },
    );
    await expectRows(['approval.granted redzone ok human'], 'the grant');
    r = await hook(s.shell, push);
    t.equal(r.code, 0, `allowed after the grant: ${r.stderr}`);
    await expectRows(['gate.fired redzone passed $actor'], 'the allowed action is recorded');

    await mkdir(join(project, 'run'), { recursive: true });
    await writeFile(join(project, 'run', 'intake.json'), '{"task":"checkout"}\n');
    r = await hook(
      s.write,
      runtime === 'codex' ? {} : { tool_input: { file_path: join(project, 'run', 'intake.json') } },
    );
    t.equal(r.code, 0, r.stderr);
    await expectRows(['artifact.written intake passed $actor'], 'a file tool wrote the intake');

    r = await hook(s.stop);
    t.equal(r.code, 0, r.stderr);
    const answer = JSON.parse(r.stdout);
    t.equal(answer.decision, s.deny, "the stop is refused the runtime's way");
    t.match(answer.reason, /proof\/proof\.json/, 'the model is handed the problems');
    await expectRows(['run.blocked handoff blocked system'], 'the refused completion');

    // The agent's shell writes the proof with the real tooling, and the handoff note.
    await run(
      process.execPath,
      [CLI, 'proof', 'run', '--run', runId, '--artifact-root', project, '--', 'true'],
      { env },
    );
    await mkdir(join(project, 'handoff'), { recursive: true });
    await writeFile(join(project, 'handoff', 'final.md'), '# Checkout\nDone.\n');
    r = await hook(s.afterShell, {
      tool_input: { command: `harness proof run --run ${runId} -- true && echo done > handoff/final.md` },
    });
    t.equal(r.code, 0, r.stderr);
    await expectRows(
      ['artifact.written prove passed $actor', 'artifact.written handoff passed $actor'],
      'shell-written artifacts',
    );

    r = await hook(s.stop);
    t.equal(r.code, 0, r.stderr);
    t.equal(r.stdout, '', 'the stop goes through');
    await expectRows(['run.completed handoff passed $actor'], 'completed');
    t.equal((await b.req('GET', `/runs/${runId}`)).body['run'].status, 'completed');
  });
}
