import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { execa } from '#execa';
import { secret } from '../helpers/bridge.js';
import { CLI } from '../helpers/cli.js';
import { json, startRecordingUpstream } from '../helpers/recording-upstream.js';

/**
 * Every line the CLI prints from a bridge answer or from an artifact root goes through the
 * terminal escaping: DEL, C1 controls and bidirectional marks and overrides, which JSON.stringify
 * leaves raw, as well as C0 controls. A stub bridge answers with such text in each place a command
 * prints; the output must hold none of those characters raw and, where it is JSON, parse back to
 * the same value. Needs `npm run build`.
 */
const HOSTILE = 'a\u001b[2J\u007f\u009b31m\u061c\u200e\u200f\u202eb\u2066c';
const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
const ESCAPED = 'a\\u{1b}[2J\\u{7f}\\u{9b}31m\\u{61c}\\u{200e}\\u{200f}\\u{202e}b\\u{2066}c';

async function harness(t: Test, answer: unknown, status: number, ...args: string[]) {
  const upstream = await startRecordingUpstream(json(status, answer));
  t.teardown(() => upstream.close());
  const r = await execa(process.execPath, [CLI, ...args], {
    reject: false,
    extendEnv: false,
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: tmpdir(),
      HARNESS_BRIDGE_URL: upstream.url.origin,
      HARNESS_BRIDGE_ACCESS_TOKEN: secret(),
    },
  });
  return { code: r.exitCode, stdout: r.stdout, stderr: r.stderr, sent: upstream.received.length };
}

async function artifactRoot(t: Test): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'harness-terminal-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  return root;
}

const createWithBundle = (root: string) => [
  'run',
  'create',
  'run-1',
  '--artifact-root',
  root,
  '--print-evidence-bundle',
];

t.test('emit prints the stored event as JSON with no raw control or bidi character', async (t) => {
  const event = { id: 'e1', type: 'node.entered', message: HOSTILE };
  const r = await harness(
    t,
    { ok: true, seq: 3, duplicate: false, event },
    201,
    'emit',
    'run-1',
    'node.entered',
    'intake',
    'm',
  );
  t.equal(r.code, 0, r.stderr);
  t.notOk(RAW.test(r.stdout), 'nothing raw');
  t.same(JSON.parse(r.stdout), { seq: 3, duplicate: false, event }, 'the same value');
});

t.test('explain escapes quarantine reasons and completion problems', async (t) => {
  const quarantined = await harness(
    t,
    { ok: true, run: { id: 'run-1', status: 'quarantined', quarantine: { reasons: [HOSTILE] } } },
    200,
    'explain',
    'run-1',
  );
  t.equal(quarantined.code, 1, quarantined.stderr);
  t.equal(quarantined.stdout, `quarantined: ${ESCAPED}\n  fix: see docs/next-steps.md#quarantined`);

  const blocked = await harness(
    t,
    {
      ok: true,
      run: {
        id: 'run-1',
        status: 'running',
        approvals: [],
        completionPreview: { ready: false, problems: [HOSTILE, 'plain'] },
      },
    },
    200,
    'explain',
    'run-1',
  );
  t.equal(blocked.code, 1, blocked.stderr);
  t.equal(
    blocked.stdout,
    `${ESCAPED}\n  fix: see docs/next-steps.md\nplain\n  fix: see docs/next-steps.md`,
    'a view without steps (an older bridge): each problem points at the docs',
  );
});

t.test('run create prints an evidence bundle naming hostile paths as escaped JSON', async (t) => {
  const root = await artifactRoot(t);
  const path = `run/${HOSTILE}.json`;
  await mkdir(join(root, 'run'));
  await writeFile(join(root, path), '{}');
  await writeFile(
    join(root, 'project-adapter.json'),
    JSON.stringify({ runtime: { artifactByNode: { intake: path } } }),
  );
  for (const [status, answer, code] of [
    [201, { ok: true, created: true }, 0],
    [409, { ok: false, error: 'run_exists', message: 'another root' }, 1],
  ] as const) {
    const r = await harness(t, answer, status, ...createWithBundle(root));
    t.equal(r.code, code, r.stderr);
    t.notOk(RAW.test(r.stdout), `${status}: nothing raw`);
    const printed = JSON.parse(r.stdout);
    t.equal(printed.ok, answer.ok);
    t.match(printed.evidenceBundle.nodes, [{ nodeId: 'intake', path }], `${status}: the path, intact`);
  }
});

t.test('a failure naming a file of the artifact root is escaped, and nothing is sent', async (t) => {
  const root = await artifactRoot(t);
  await symlink('/etc/passwd', join(root, HOSTILE));
  const r = await harness(t, { ok: true }, 201, ...createWithBundle(root));
  t.equal(r.code, 1);
  t.equal(r.stdout, '');
  t.notOk(RAW.test(r.stderr), 'nothing raw');
  t.match(r.stderr, `harness: cannot inventory the artifact root: inventory: ${ESCAPED} is a symbolic link`);
  t.equal(r.sent, 0, 'the bridge was not asked');
});
