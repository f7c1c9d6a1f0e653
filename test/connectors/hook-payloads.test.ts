import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { startTestBridge } from '../helpers/bridge.js';
import {
  agentEnv,
  eventRows,
  GIT_PUSH_RULE,
  hookInProcess,
  sessionPayload,
  writeConnector,
} from '../helpers/hook.js';
import { ROOT } from '../helpers/paths.js';

/**
 * Every documented payload (test/fixtures/hooks/<runtime>/<event>.json), fed to the hook in turn,
 * gives exactly the events and the answer its table says. The connector holds `git push` and any
 * write to an `intake.json` for approval, so the tool payloads meet a rule, or, for Read, none.
 */
const EXPECTED: Record<string, Record<string, { code: number; events: string[] }>> = {
  'claude-code': {
    SessionStart: { code: 0, events: ['agent.connected intake ok', 'node.entered intake ok'] },
    'PreToolUse.Bash': { code: 2, events: ['approval.requested redzone needs_approval'] },
    'PreToolUse.Write': { code: 2, events: ['approval.requested redzone needs_approval'] },
    'PreToolUse.Read': { code: 0, events: [] },
    'PostToolUse.Write': { code: 0, events: ['artifact.written intake passed'] },
    'PostToolUse.Bash': { code: 0, events: [] },
    Stop: { code: 0, events: ['run.blocked handoff blocked'] },
  },
  codex: {
    SessionStart: { code: 0, events: ['agent.connected intake ok', 'node.entered intake ok'] },
    'PreToolUse.Bash': { code: 2, events: ['approval.requested redzone needs_approval'] },
    'PreToolUse.apply_patch': { code: 2, events: ['approval.requested redzone needs_approval'] },
    'PostToolUse.apply_patch': { code: 0, events: ['artifact.written intake passed'] },
    'PostToolUse.Bash': { code: 0, events: [] },
    Stop: { code: 0, events: ['run.blocked handoff blocked'] },
  },
  gemini: {
    SessionStart: { code: 0, events: ['agent.connected intake ok', 'node.entered intake ok'] },
    'BeforeTool.run_shell_command': { code: 2, events: ['approval.requested redzone needs_approval'] },
    'BeforeTool.write_file': { code: 2, events: ['approval.requested redzone needs_approval'] },
    'AfterTool.write_file': { code: 0, events: ['artifact.written intake passed'] },
    'AfterTool.run_shell_command': { code: 0, events: [] },
    AfterAgent: { code: 0, events: ['run.blocked handoff blocked'] },
  },
};

for (const [runtime, expected] of Object.entries(EXPECTED)) {
  t.test(`${runtime}: each documented payload maps to its events`, async (t) => {
    const files = (await readdir(join(ROOT, 'test', 'fixtures', 'hooks', runtime))).map((f) =>
      f.replace(/\.json$/, ''),
    );
    t.same(
      files.sort(),
      Object.keys(expected).sort(),
      'one expectation per fixture, and a fixture per expectation',
    );
    const b = await startTestBridge();
    t.teardown(() => b.close());
    const project = b.t.artifactRoot;
    await writeConnector(project, {
      redZone: [GIT_PUSH_RULE, { path: '**/intake.json', approvalOwner: 'lead', approvalScope: 'intake' }],
    });
    const runId = `${runtime}-fixture`;
    const rows: string[] = [];
    // In the order a session meets them: start, tools before, files written, tools after, stop.
    const order = (n: string) =>
      ['SessionStart', 'Pre', 'Before', 'Post', 'After', 'Stop'].findIndex((p) => n.startsWith(p));
    for (const name of Object.keys(expected).sort((a, b) => order(a) - order(b))) {
      // The file tools' payloads report writing the intake: it is written once, before them.
      if (/^(Post|After)Tool/.test(name) && !rows.some((r) => r.startsWith('artifact.written'))) {
        await mkdir(join(project, 'run'), { recursive: true });
        await writeFile(join(project, 'run', 'intake.json'), '{"task":"checkout"}\n');
      }
      const answer = await hookInProcess(
        runtime,
        await sessionPayload(runtime, name, project, { session_id: 'fixture' }),
        agentEnv(b),
      );
      const want = expected[name]!;
      t.equal(answer.exitCode, want.code, `${name}: exit ${want.code} ${answer.stderr ?? ''}`);
      rows.push(
        ...want.events.map((e) => `${e} ${e.startsWith('run.blocked') ? 'system' : RUNTIME_ACTOR[runtime]}`),
      );
      t.same(await eventRows(b, runId), rows, `${name}: its events`);
    }
  });
}

const RUNTIME_ACTOR: Record<string, string> = {
  'claude-code': 'runtime-a',
  codex: 'runtime-b',
  gemini: 'runtime-c',
};
