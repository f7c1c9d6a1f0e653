import { mkdtemp, readdir, readFile, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import t, { type Test } from 'tap';
import { execa } from '#execa';
import { trustStoreDigest } from '../src/server/trust-pin.js';
import { cleanup, gitIn, secret, startTestBridge, type TestBridge } from './helpers/bridge.js';
import { CLI, runCli } from './helpers/cli.js';
import { rosterExample } from './helpers/commissioned-run.js';
import { ROOT } from './helpers/paths.js';

/**
 * Issue 29 item 3: the two walkthroughs in examples/ run, as a reader would run them, against a
 * real bridge and its real finish-line gate, each in a fresh empty directory with `harness` being
 * this checkout's built CLI. Each must end in run.completed in the run's journal; the fix `harness
 * explain` prints while the run is blocked must be the command the script then runs; every JSON
 * file in the artifact root must be one a harness writer writes.
 */

const HARNESS = `${process.execPath} ${CLI}`;
const script = (name: string) => join(ROOT, 'examples', name, 'run.sh');

/** The JSON evidence the writers make: route write, proof run (proof and its ignored-files listing), review sign, packet write. */
const WRITTEN_BY_HARNESS = [
  'proof/ignored-files.json',
  'proof/proof.json',
  'review/review.json',
  'run/packet.json',
  'run/route.json',
];

/**
 * Runs one example in a fresh empty directory with exactly `env` (plus PATH, HOME and HARNESS).
 * The script runs in its own process group, killed in teardown should anything it started
 * outlive it.
 */
async function runExample(t: Test, name: string, env: Record<string, string>) {
  const dir = await realpath(await mkdtemp(join(tmpdir(), `hb-example-${name}-`)));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const child = execa('sh', [script(name)], {
    cwd: dir,
    extendEnv: false,
    env: { PATH: process.env['PATH'] ?? '', HOME: dir, HARNESS, STEP_TIMEOUT: '60', ...env },
    reject: false,
    detached: true,
    timeout: 120_000,
  });
  t.teardown(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // The group is gone: everything the script started has ended.
    }
  });
  const started = Date.now();
  const r = await child;
  t.comment(`${name}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  if (!t.equal(r.exitCode, 0, `${name}/run.sh exits 0`))
    t.comment(`${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`);
  return { dir, stdout: r.stdout, stderr: r.stderr };
}

/**
 * The first `harness explain` that printed fixes: each distinct fix, with `harness` spelled as the
 * script spells it and the user's words (`<like-this>`) filled in from `fill`, must be run by the
 * script after it, command by command and in order (the script shows each command as `$ ...`).
 */
function followsExplain(t: Test, stdout: string, fill: Record<string, string>) {
  const lines = stdout.split('\n');
  const at = lines.findIndex(
    (l, i) => l.startsWith(`$ ${HARNESS} explain `) && lines[i + 2]?.startsWith('  fix: '),
  );
  t.ok(at >= 0, 'the script runs harness explain while the run is blocked');
  let end = at + 1;
  while (end < lines.length && !lines[end]!.startsWith('$ ')) end++;
  const fixes = [
    ...new Set(
      lines
        .slice(at + 1, end)
        .filter((l) => l.startsWith('  fix: '))
        .map((l) => l.slice('  fix: '.length)),
    ),
  ];
  t.ok(fixes.length > 0, 'explain printed a fix');
  const expected = fixes.flatMap((fix) =>
    fix.split(' && ').map((command) => {
      t.ok(command.startsWith('harness '), `the fix is a harness command: ${command}`);
      let filled = `${HARNESS} ${command.slice('harness '.length)}`;
      for (const [word, value] of Object.entries(fill)) filled = filled.replaceAll(word, value);
      t.notMatch(filled, /<[a-z-]+>/, `every word the user supplies is filled in: ${filled}`);
      return `$ ${filled}`;
    }),
  );
  const ran = lines.slice(end).filter((l) => l.startsWith('$ '));
  let next = 0;
  for (const command of expected) {
    const found = ran.indexOf(command, next);
    t.ok(found >= 0, `the script then runs the printed fix: ${command}`);
    next = found + 1;
  }
}

/** The run as the bridge holds it: completed, its journal's last event run.completed. */
async function expectCompleted(t: Test, b: TestBridge, runId: string) {
  const got = await b.req('GET', `/runs/${runId}`);
  t.equal(got.status, 200, got.body['error']);
  const { run } = got.body;
  t.equal(run.status, 'completed');
  const page = run.eventPage;
  t.equal(page.offset + page.returned, page.total, 'the newest page of the journal');
  t.equal(run.events.at(-1)?.type, 'run.completed', "the journal's last event is run.completed");
  return run;
}

/** Every JSON file under the artifact root is one a harness writer made (`only`: the ones expected). */
async function expectOnlyWrittenJson(t: Test, root: string, only: string[]) {
  const files = (await readdir(root, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile() && e.name.endsWith('.json'))
    .map((e) => relative(root, join(e.parentPath, e.name)))
    .sort();
  t.same(files, only, 'the JSON evidence is what the writers wrote, and nothing else');
}

function expectNoCredential(t: Test, out: string, values: string[]) {
  t.ok(
    values.every((v) => !out.includes(v)),
    'no credential is printed',
  );
}

t.test('examples/minimal-run: an empty directory to run.completed, all 14 nodes', async (t) => {
  const b = await startTestBridge(undefined, { realGate: true });
  t.teardown(() => cleanup(b));
  const token = b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!;
  const runId = 'minimal-1';
  const { dir, stdout, stderr } = await runExample(t, 'minimal-run', {
    HARNESS_BRIDGE_URL: b.url,
    HARNESS_BRIDGE_ACCESS_TOKEN: token,
    RUN_ID: runId,
  });
  const run = await expectCompleted(t, b, runId);
  const nodes: { id: string; state: string; required: boolean; skipReason?: string }[] = run.nodes;
  t.equal(nodes.filter((n) => n.required).length, 14, 'all 14 nodes required');
  t.same(
    nodes.filter((n) => n.state === 'passed').map((n) => n.id),
    ['route', 'system-design', 'qa-break-it', 'prove', 'handoff'],
    'the nodes with an artifact passed',
  );
  t.ok(
    nodes.every((n) => n.state === 'passed' || (n.state === 'skipped' && n.skipReason)),
    'every other node skipped with its reason',
  );
  followsExplain(t, stdout, { '(test-command)': 'node --test' });
  await expectOnlyWrittenJson(t, join(dir, 'evidence'), [
    'proof/ignored-files.json',
    'proof/proof.json',
    'run/route.json',
  ]);
  expectNoCredential(
    t,
    stdout + stderr,
    Object.values(b.t.env).filter((v) => v.length >= 32),
  );
});

t.test('examples/commissioned-run: pack, trust store and reviewer committed, to run.completed', async (t) => {
  const credentials = {
    HARNESS_BRIDGE_INTEGRITY_KEY: secret(),
    HARNESS_BRIDGE_ACCESS_TOKEN: secret(),
    HARNESS_HUMAN_APPROVAL_TOKEN: secret(),
  };
  const runId = 'commissioned-1';
  const { dir, stdout, stderr } = await runExample(t, 'commissioned-run', { ...credentials, RUN_ID: runId });
  followsExplain(t, stdout, {
    '(private-key-file)': join(dir, 'keys/alice-1.key.pem'),
    '(key-id)': 'alice-1',
    '(roster-file)': join(dir, 'roster.json'),
  });
  const repo = join(dir, 'project');
  await expectOnlyWrittenJson(t, join(repo, 'evidence'), WRITTEN_BY_HARNESS);
  expectNoCredential(t, stdout + stderr, Object.values(credentials));

  // The script's bridge has stopped (its lease is free); another bridge on the same repository,
  // committed trust store and data reads the run back, re-verifying the completed run.
  const store = await gitIn(repo)('show', 'HEAD:.harness-pack/controls/review-trust.v1.json');
  const dataDir = join(dir, 'runs');
  const b = await startTestBridge(
    {
      dir: await mkdtemp(join(tmpdir(), 'hb-example-reader-')),
      repo,
      dataDir,
      artifactRoot: join(repo, 'evidence'),
      env: {
        PATH: process.env['PATH'] ?? '',
        ...credentials,
        HARNESS_REVIEW_TRUST_SHA256: trustStoreDigest(`${store}\n`),
        HARNESS_REPO_ROOT: repo,
        HARNESS_DATA_DIR: dataDir,
        HARNESS_BRIDGE_PORT: '0',
        HARNESS_WORKERS: '1',
      },
    },
    { realGate: true },
  );
  t.teardown(() => cleanup(b));
  const run = await expectCompleted(t, b, runId);
  t.equal(run.commissioned, true, "the repository's committed pack commissioned the run");
  const packet = JSON.parse(await readFile(join(repo, 'evidence/run/packet.json'), 'utf8'));
  t.equal(
    packet.subject.commit,
    await gitIn(repo)('rev-parse', 'HEAD'),
    'the packet binds the proven commit',
  );
  t.equal(packet.roles.independentReviewer.actorId, 'alice', 'signed by the enrolled reviewer');
});

t.test(
  'the scripts write no evidence JSON by hand: the roster is the help example, the adapter is configuration',
  async (t) => {
    const help = await runCli(['review', 'sign', '--help'], { PATH: process.env['PATH'] ?? '' });
    for (const name of ['minimal-run', 'commissioned-run']) {
      const text = await readFile(script(name), 'utf8');
      const heredocs = [...text.matchAll(/<<'(\w+)'\n([\s\S]*?)\n\1\n/g)].map((m) => ({
        tag: m[1]!,
        body: m[2]!,
      }));
      const outside = heredocs.reduce((s, h) => s.replace(h.body, ''), text);
      t.notMatch(outside, /[{,]\s*"[\w-]+"\s*:/, `${name}: no JSON object outside its heredocs`);
      t.notMatch(text, /schema/, `${name}: names no schema`);
      for (const { tag, body } of heredocs) {
        if (tag === 'ROSTER')
          t.same(
            JSON.parse(body),
            rosterExample(help.stdout),
            'the roster is the example of review sign --help',
          );
        else if (tag === 'ADAPTER')
          t.same(Object.keys(JSON.parse(body)).sort(), ['finishLineAssurance', 'runtime']);
        else t.fail(`${name}: an unexpected heredoc ${tag}`);
      }
    }
    t.notMatch(
      await readFile(join(ROOT, 'examples/common.sh'), 'utf8'),
      /"[\w-]+"\s*:/,
      'common.sh writes no JSON',
    );
  },
);
