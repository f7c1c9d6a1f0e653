import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { cleanup, startTestBridge } from '../helpers/bridge.js';
import { bridgeClientEnv } from '../helpers/cli.js';
import { CLI } from '../helpers/paths.js';
import { type RecordingUpstream, startRecordingUpstream } from '../helpers/recording-upstream.js';

/**
 * SPEC Endpoints 9 and CONTRACT 8: `harness emit` reads the access token (and, for a grant or
 * deny, the human token) from the environment only; an unknown option or an argument carrying a
 * credential exits 2 before any request; a refused event exits 1. Needs `npm run build`.
 */

t.test('harness emit', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const base = bridgeClientEnv(b);
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
    t.match(got.body['run'].events[0], {
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
      // A non-canonical run ID: `..` would resolve to another route.
      ['..', 'node.entered', 'intake', 'x'],
      ['.', 'node.entered', 'intake', 'x'],
      ['', 'node.entered', 'intake', 'x'],
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

  // A grant and a denial alike are a human's decision; a denial fails its node, so it carries the
  // failed state's fields. [run, type, extra arguments, the approval's and its node's state after]
  const decisions: [string, string, string[], string, string][] = [
    ['em', 'approval.granted', [], 'granted', 'active'],
    [
      'emdeny',
      'approval.denied',
      ['--status', 'blocked', '--failure-reason', 'window closed', '--recovery-path', 'retry Monday'],
      'denied',
      'failed',
    ],
  ];
  for (const [runId, type, extra, approvalState, nodeState] of decisions) {
    t.test(`${type} needs the human token from the environment`, async (t) => {
      const req = await emit([
        runId,
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
      const decision = [
        runId,
        type,
        'redzone',
        'decided',
        '--actor',
        'human',
        '--approval-owner',
        'ops',
        '--approval-scope',
        'deploy',
        ...extra,
      ];
      const before = await count(runId);
      const journal = await b.journal(runId);
      const refused = await emit(decision);
      t.equal(refused.code, 2, 'without HARNESS_HUMAN_APPROVAL_TOKEN: usage error');
      t.equal(
        refused.stderr,
        `harness: ${type} is a human's decision: run \`harness approve\` in the approval shell (HARNESS_HUMAN_APPROVAL_TOKEN is not set here)\n`,
      );
      t.equal(await count(runId), before);
      t.ok((await b.journal(runId)).equals(journal), 'journal bytes unchanged');
      const ok = await emit(decision, {
        ...base,
        HARNESS_HUMAN_APPROVAL_TOKEN: b.t.env['HARNESS_HUMAN_APPROVAL_TOKEN']!,
      });
      t.equal(ok.code, 0, ok.stderr);
      t.equal(await count(runId), before + 1);
      const run = (await b.req('GET', `/runs/${runId}`)).body['run'];
      t.equal(run.approvals.find((a: { nodeId: string }) => a.nodeId === 'redzone')?.status, approvalState);
      t.equal(run.nodes.find((n: { id: string }) => n.id === 'redzone')?.state, nodeState);
    });
  }

  t.test('a refused event exits 1 with the error code', async (t) => {
    const before = await b.journal('em');
    const r = await emit(['em', 'node.failed', 'implement', 'broke', '--status', 'failed']);
    t.equal(r.code, 1);
    t.ok(r.stderr.startsWith('event_contract_violation'), r.stderr);
    t.ok((await b.journal('em')).equals(before), 'journal bytes unchanged');
  });

  t.test('--self-heal-pr-url may name the local proposal self_heal/pr.json', async (t) => {
    const root = b.t.artifactRoot;
    t.equal((await emit(['emheal', 'run.created', 'intake', 'go', '--artifact-root', root])).code, 0);
    await mkdir(join(root, 'self_heal'), { recursive: true });
    await writeFile(join(root, 'self_heal', 'pr.json'), '{}');
    const args = ['emheal', 'self_heal.pr_proposed', 'self-heal', 'proposed'];
    const r = await emit([...args, '--self-heal-pr-url', 'self_heal/pr.json']);
    t.equal(r.code, 0, r.stderr);
    t.equal(JSON.parse(r.stdout).event.claim?.path, 'self_heal/pr.json', 'verified and claimed');
    const before = await b.journal('emheal');
    const bad = await emit([...args, '--self-heal-pr-url', 'self_heal/other.json']);
    t.equal(bad.code, 1);
    t.ok(bad.stderr.startsWith('event_contract_violation'), bad.stderr);
    t.ok((await b.journal('emheal')).equals(before), 'journal bytes unchanged');
  });
});

const runCli = (args: string[], env: Record<string, string>) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });

const ACCESS = 'emit-test-access-token-0123456789abcdef';
const HUMAN = 'emit-test-human-token-0123456789abcdefgh';

/** A recording bridge that accepts every event with 201 and a plausible body. */
async function acceptingBridge(t: Test): Promise<RecordingUpstream> {
  const upstream = await startRecordingUpstream((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      res.writeHead(201, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify({ ok: true, seq: 0, duplicate: false, event: JSON.parse(raw || '{}') }));
    });
  });
  t.teardown(() => upstream.close());
  return upstream;
}

const envFor = (url: URL) => ({
  PATH: process.env['PATH'] ?? '',
  HARNESS_BRIDGE_URL: url.origin,
  HARNESS_BRIDGE_ACCESS_TOKEN: ACCESS,
  HARNESS_HUMAN_APPROVAL_TOKEN: HUMAN,
});

t.test('emit sends the human token only with a grant or deny, even when it is in the env', async (t) => {
  const upstream = await acceptingBridge(t);
  const r = await runCli(['emit', 'hx', 'node.entered', 'intake', 'hello'], envFor(upstream.url));
  t.equal(r.code, 0, r.stderr);
  t.equal(upstream.received.length, 1);
  t.equal(upstream.received[0]?.headers['x-harness-bridge-token'], ACCESS);
  t.equal(
    upstream.received[0]?.headers['x-harness-human-token'],
    undefined,
    'node.entered never carries the human token',
  );
  const g = await runCli(
    ['emit', 'hx', 'approval.granted', 'redzone', 'ok', '--actor', 'human'],
    envFor(upstream.url),
  );
  t.equal(g.code, 0, g.stderr);
  t.equal(upstream.received[1]?.headers['x-harness-human-token'], HUMAN, 'a grant carries it');
  const d = await runCli(
    ['emit', 'hx', 'approval.denied', 'redzone', 'no', '--actor', 'human', '--status', 'blocked'],
    envFor(upstream.url),
  );
  t.equal(d.code, 0, d.stderr);
  t.equal(upstream.received[2]?.headers['x-harness-human-token'], HUMAN, 'a denial carries it');
});

t.test('emit never follows a redirect: exit 1 and the target gets no request', async (t) => {
  const target = await acceptingBridge(t);
  const redirector = await startRecordingUpstream((req, res) => {
    res.writeHead(302, { location: new URL(req.url ?? '/', target.url).href });
    res.end();
  });
  t.teardown(() => redirector.close());
  for (const args of [
    ['hr', 'node.entered', 'intake', 'hello'],
    ['hr', 'approval.granted', 'redzone', 'ok', '--actor', 'human'],
  ]) {
    const r = await runCli(['emit', ...args], envFor(redirector.url));
    t.equal(r.code, 1, `${args[1]}: ${r.stderr}`);
    t.notMatch(r.stdout + r.stderr, new RegExp(`${HUMAN}|${ACCESS}`), 'no credential is printed');
  }
  t.equal(redirector.received.length, 2, 'the redirecting bridge got both posts');
  t.equal(target.received.length, 0, 'the redirect target never got a request (nor a token)');
});
