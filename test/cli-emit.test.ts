import { execFile } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import { cleanup, startTestBridge } from './helpers/bridge.js';

/**
 * SPEC Endpoints 9 and CONTRACT 8: `harness emit` reads the access token (and, for a grant or
 * deny, the human token) from the environment only; an unknown option or an argument carrying a
 * credential exits 2 before any request; a refused event exits 1. Needs `npm run build`.
 */
const CLI = join(import.meta.dirname, '..', 'dist', 'src', 'cli', 'main.js');

t.test('harness emit', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const base = {
    PATH: process.env['PATH'] ?? '',
    HOME: b.t.dir,
    HARNESS_BRIDGE_URL: b.url,
    HARNESS_BRIDGE_ACCESS_TOKEN: b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!,
  };
  const emit = (args: string[], env: Record<string, string> = base) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, [CLI, 'emit', ...args], { env }, (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      });
    });
  const count = async (runId: string) => {
    const r = await b.req('GET', `/runs/${runId}`);
    return r.status === 404 ? -1 : r.body['run'].eventCount;
  };

  t.test('a well-formed emit posts one event', async (t) => {
    const r = await emit(['em', 'node.entered', 'intake', 'hello']);
    t.equal(r.code, 0, r.stderr);
    t.equal(JSON.parse(r.stdout).seq, 0);
    const got = await b.req('GET', '/runs/em');
    t.match(got.body['events'][0], {
      type: 'node.entered',
      nodeId: 'intake',
      actor: 'harness',
      eventSource: 'api',
    });
    t.equal(got.body['run'].artifactRootSet, false, 'the emitter never invents an artifact root');
  });

  t.test('usage errors exit 2 before any request', async (t) => {
    const before = await b.journal('em');
    for (const args of [
      ['em', 'node.entered', 'intake', 'x', '--bogus'],
      ['em', 'node.entered', 'intake', 'x', '--human-token', 'abc'],
      ['em', 'node.entered', 'intake', `leak ${base.HARNESS_BRIDGE_ACCESS_TOKEN}`],
      ['em', 'node.entered', 'intake', 'x', '--approval-scope', b.t.env['HARNESS_HUMAN_APPROVAL_TOKEN']!],
      ['em', 'node.entered', 'intake', 'x', '--status', 'done'],
    ]) {
      const env =
        args.at(-1) === b.t.env['HARNESS_HUMAN_APPROVAL_TOKEN']
          ? { ...base, HARNESS_HUMAN_APPROVAL_TOKEN: b.t.env['HARNESS_HUMAN_APPROVAL_TOKEN']! }
          : base;
      const r = await emit(args, env);
      t.equal(r.code, 2, `${args.slice(4).join(' ')}: ${r.stderr}`);
    }
    const { HARNESS_BRIDGE_ACCESS_TOKEN: _, ...noToken } = base;
    t.equal(
      (await emit(['em', 'node.entered', 'intake', 'x'], noToken)).code,
      2,
      'no access token in the env',
    );
    t.ok((await b.journal('em')).equals(before), 'journal bytes unchanged');
  });

  t.test('a grant needs the human token from the environment', async (t) => {
    const req = await emit([
      'em',
      'approval.requested',
      'redzone',
      'deploy?',
      '--status',
      'needs_approval',
      '--approval-owner',
      'ops',
      '--approval-scope',
      'deploy',
    ]);
    t.equal(req.code, 0, req.stderr);
    const grant = [
      'em',
      'approval.granted',
      'redzone',
      'ok',
      '--actor',
      'human',
      '--approval-owner',
      'ops',
      '--approval-scope',
      'deploy',
    ];
    const before = await count('em');
    t.equal((await emit(grant)).code, 2, 'without HARNESS_HUMAN_APPROVAL_TOKEN: usage error');
    t.equal(await count('em'), before);
    const ok = await emit(grant, {
      ...base,
      HARNESS_HUMAN_APPROVAL_TOKEN: b.t.env['HARNESS_HUMAN_APPROVAL_TOKEN']!,
    });
    t.equal(ok.code, 0, ok.stderr);
    t.equal(await count('em'), before + 1);
  });

  t.test('a refused event exits 1 with the error code', async (t) => {
    const before = await b.journal('em');
    const r = await emit(['em', 'node.failed', 'implement', 'broke', '--status', 'failed']);
    t.equal(r.code, 1);
    t.ok(r.stderr.startsWith('event_contract_violation'), r.stderr);
    t.ok((await b.journal('em')).equals(before), 'journal bytes unchanged');
  });
});
