import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import { execa } from '#execa';
import { NODE_IDS } from '../src/contract/index.js';
import { claimArtifact } from '../src/validators/artifact-root.js';
import { trustPinOf } from '../src/validators/trust-store.js';
import { buildFixture, type Fixture } from './helpers/finish-line-fixture.js';
import { CLI } from './helpers/paths.js';
import { waivedFixture } from './helpers/waivers-fixture.js';

/**
 * The evidence tools end to end, as a user runs them: `harness proof run`, `review keygen|sign`,
 * `run create`, `explain`. They run the built CLI (`npm test` builds dist/ first): loading the
 * whole CLI through the TypeScript loader per spawn would take most of a minute.
 */
const main = CLI;
const harness = (args: string[], env: Record<string, string> = {}, cwd?: string) =>
  execa(process.execPath, [main, ...args], {
    reject: false,
    extendEnv: false,
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', ...env },
    ...(cwd ? { cwd } : {}),
  });

t.test(
  'proof run records the real exit code, output digest and commit; exit code mirrors the result',
  async (t) => {
    const f = await buildFixture(t, { commissioned: false, corrective: false });
    const env = {
      HARNESS_REPO_ROOT: f.repo,
      HARNESS_BRIDGE_ACCESS_TOKEN: 'secret-token-value-that-is-long-enough',
    };
    const pass = await harness(
      [
        'proof',
        'run',
        '--run',
        f.runId,
        '--artifact-root',
        f.root,
        '--',
        'node',
        '-e',
        'console.log(Object.keys(process.env).join(","))',
      ],
      env,
    );
    t.equal(pass.exitCode, 0, pass.stderr);
    t.notMatch(pass.stderr, /HARNESS_BRIDGE_ACCESS_TOKEN/, 'the proof command does not see the access token');
    const proof = await f.read('proof/proof.json');
    t.equal(proof.status, 'passed');
    t.equal(proof.commands[0].exitCode, 0);
    t.match(proof.commands[0].outputDigest, /^sha256:[0-9a-f]{64}$/);
    t.same(proof.subject, {
      commit: f.postFix,
      dirty: false,
      ignored: {
        path: 'proof/ignored-files.json',
        sha256: (await claimArtifact(f.root, 'proof/ignored-files.json')).sha256,
      },
    });
    t.same(
      await f.read('proof/ignored-files.json'),
      { schema: 'harness.ignored-files.v1', runId: f.runId, files: [] },
      'it recorded the ignored files it ran with: none in the fixture',
    );
    t.same(await f.rule('proof'), []);

    const fail = await harness(
      ['proof', 'run', '--run', f.runId, '--artifact-root', f.root, '--', 'node', '-e', 'process.exit(3)'],
      env,
    );
    t.equal(fail.exitCode, 1);
    const failed = await f.read('proof/proof.json');
    t.equal(failed.status, 'failed');
    t.equal(failed.commands[0].exitCode, 3);
    t.ok((await f.rule('proof')).length > 0, 'a failed proof does not pass the gate');
  },
);

t.test('review keygen + enrol + review sign produce a review the gate accepts', async (t) => {
  const f = await buildFixture(t);
  const keys = join(f.repo, '..', 'keys');
  await mkdir(keys);
  const gen = await harness(['review', 'keygen', '--out', keys, '--actor-id', 'reviewer-actor']);
  t.equal(gen.exitCode, 0, gen.stderr);
  const entry = JSON.parse(gen.stdout);
  t.equal(entry.status, 'active');
  // An existing key is never overwritten, and a missing --out is the environment's fault: exit 2.
  const again = await harness([
    'review',
    'keygen',
    '--out',
    keys,
    '--actor-id',
    'a',
    '--key-id',
    entry.keyId,
  ]);
  t.equal(again.exitCode, 2, again.stderr);
  t.match(again.stderr, /^harness: a key .* is already in --out .*; it is never overwritten$/);
  // A missing --out is named, never created (a mistyped path would hide a private key).
  const missing = join(keys, 'missing');
  const nowhere = await harness(['review', 'keygen', '--out', missing, '--actor-id', 'a']);
  t.equal(nowhere.exitCode, 2, nowhere.stderr);
  t.equal(nowhere.stderr, `harness: --out ${missing}: the directory does not exist; create it first`);
  t.notOk(existsSync(missing), 'nothing was created');
  const file = join(keys, 'a-file');
  await writeFile(file, '');
  const notDir = await harness(['review', 'keygen', '--out', file, '--actor-id', 'a']);
  t.equal(notDir.exitCode, 2, notDir.stderr);
  t.equal(notDir.stderr, `harness: --out ${file} is not a directory`);
  const store = { schema: 'harness.review-trust.v1', keys: [entry] };
  await writeFile(join(f.repo, 'controls/review-trust.v1.json'), JSON.stringify(store));
  await f.git('commit', '-q', '-am', 'enrol reviewer');
  f.env.trustPin = trustPinOf(store);
  const rosterFile = join(keys, 'roster.json');
  await writeFile(rosterFile, JSON.stringify(f.roster));
  const sign = await harness([
    'review',
    'sign',
    '--run',
    f.runId,
    '--artifact-root',
    f.root,
    '--key',
    join(keys, `${entry.keyId}.key.pem`),
    '--key-id',
    entry.keyId,
    '--roster',
    rosterFile,
  ]);
  t.equal(sign.exitCode, 0, sign.stderr);
  t.equal((await f.read('review/review.json')).signature.keyId, entry.keyId);
  await f.repack();
  const r = await f.run();
  // The enrolment commit moved HEAD past the proven commit, but only the trust store changed.
  t.same(r.rules.find((x) => x.name === 'review-signature')?.problems, []);
  t.same(r.rules.find((x) => x.name === 'review')?.problems, []);
  const bad = await harness([
    'review',
    'sign',
    '--run',
    f.runId,
    '--artifact-root',
    f.root,
    '--key',
    join(keys, 'missing.pem'),
    '--key-id',
    entry.keyId,
    '--roster',
    rosterFile,
  ]);
  t.equal(bad.exitCode, 2, 'an unreadable key is a usage error');
});

async function fakeBridge(t: any, handler: (url: string, body: string) => [number, unknown]) {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      t.equal(req.headers['x-harness-bridge-token'], 'tok-'.repeat(10));
      const [status, json] = handler(req.url ?? '', body);
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

t.test('run create --print-evidence-bundle prints the digest the reviewer signs', async (t) => {
  const f = await buildFixture(t);
  let posted: any;
  const url = await fakeBridge(t, (_u, body) => {
    posted = JSON.parse(body);
    return [201, { ok: true, created: true, run: {} }];
  });
  const r = await harness(['run', 'create', f.runId, '--artifact-root', f.root, '--print-evidence-bundle'], {
    HARNESS_BRIDGE_URL: url,
    HARNESS_BRIDGE_ACCESS_TOKEN: 'tok-'.repeat(10),
    HARNESS_REPO_ROOT: f.repo,
  });
  t.equal(r.exitCode, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  t.equal(out.evidenceBundleDigest, (await f.read('review/review.json')).evidenceBundleDigest);
  t.same(posted, { id: f.runId, artifactRoot: f.root });
  const noToken = await harness(['run', 'create', f.runId, '--artifact-root', f.root]);
  t.equal(noToken.exitCode, 2);
});

t.test(
  'explain prints one line per problem, then its fix, and exits 1 when blocked, 0 when ready',
  async (t) => {
    const f = await buildFixture(t, { commissioned: false, corrective: false });
    const problem = 'required node prove is pending, not passed';
    const step = { problem, nodeId: 'prove', fix: 'the fix the bridge rendered' };
    let view: any = viewOf(f, { completionPreview: { ready: false, problems: [problem], steps: [step] } });
    const url = await fakeBridge(t, () => [200, { ok: true, run: view }]);
    const env = { HARNESS_BRIDGE_URL: url, HARNESS_BRIDGE_ACCESS_TOKEN: 'tok-'.repeat(10) };
    const blocked = await harness(['explain', f.runId], env);
    t.equal(blocked.exitCode, 1);
    t.equal(blocked.stdout, `${problem}\n  fix: the fix the bridge rendered`, "the bridge's own fix");
    const json = await harness(['explain', f.runId, '--json'], env);
    t.equal(json.exitCode, 1);
    t.same(JSON.parse(json.stdout), [step], '--json: the same, as {problem, nodeId?, fix}');
    view = viewOf(f);
    const ready = await harness(['explain', f.runId], env);
    t.equal(ready.exitCode, 0, ready.stderr);
    t.equal(ready.stdout, 'ready to complete');
    t.match(
      ready.stderr,
      `note: the content rules were not run; \`harness explain ${f.runId} --artifact-root (artifact-root)\``,
      'without the root, ready says the content rules were not run',
    );
    const readyJson = await harness(['explain', f.runId, '--json'], env);
    t.equal(readyJson.exitCode, 0);
    t.same(JSON.parse(readyJson.stdout), []);
    t.equal((await harness(['explain', 'not a run id'], env)).exitCode, 2);
  },
);

/** The run view of a fixture run (every node passed, its artifacts verified), as the bridge sends it. */
function viewOf(f: Fixture, extra: Record<string, unknown> = {}) {
  const nodes = NODE_IDS.map((id) => ({
    id,
    state: 'passed',
    required: f.facts.config.requiredNodes.includes(id),
    artifact: (f.facts.config.artifactByNode as Record<string, string>)[id],
    artifactVerified: true,
    skipReason: null,
    failureReason: null,
    recoveryPath: null,
    updatedSeq: 1,
  }));
  return {
    id: f.runId,
    status: 'running',
    runMode: 'live',
    commissioned: f.facts.config.commissioned,
    createdAt: '2025-01-01T00:00:00Z',
    trustPin: f.env.trustPin,
    artifactRootSet: true,
    adapter: null,
    nodes,
    approvals: [],
    approvalsOmitted: 0,
    artifacts: Object.values(f.facts.state.artifacts),
    selfHeal: {
      detected: false,
      detectedSeq: null,
      resolved: false,
      resolvedSeq: null,
      prUrl: null,
      artifact: null,
    },
    completionPreview: { ready: true, problems: [], steps: [] },
    quarantine: null,
    ...extra,
  };
}

/** `harness explain` of the fixture's run with its root, against the fake bridge at `url`. */
const explainLocal = (f: Fixture, url: string) =>
  harness(['explain', f.runId, '--artifact-root', f.root], {
    HARNESS_BRIDGE_URL: url,
    HARNESS_BRIDGE_ACCESS_TOKEN: 'tok-'.repeat(10),
    HARNESS_REPO_ROOT: f.repo,
  });

t.test('explain --artifact-root adds the local content-validator verdict', async (t) => {
  const f = await buildFixture(t, { commissioned: false, corrective: false });
  await f.mutate('proof/proof.json', (d) => (d.status = 'failed'));
  const view = viewOf(f);
  const url = await fakeBridge(t, () => [200, { ok: true, run: view }]);
  const r = await explainLocal(f, url);
  t.equal(r.exitCode, 1, r.stderr);
  t.match(r.stdout, /^local: proof: proof\/proof.json status is failed/m);
  t.ok(
    r.stdout.includes(
      `proof.json status is failed, not passed\n  fix: harness proof run --run ${f.runId} --artifact-root ${f.root} -- (test-command) && harness node pass ${f.runId} prove --artifact proof/proof.json`,
    ),
    'the fix runs the proof again under the real root and claims it',
  );
  await readFile(join(f.root, 'proof/proof.json'));
});

t.test('explain checks only under the root the run sealed, as the bridge confirms it', async (t) => {
  const f = await buildFixture(t, { commissioned: false, corrective: false });
  await f.mutate('proof/proof.json', (d) => (d.status = 'failed'));
  const posted: unknown[] = [];
  let sealed = true;
  const url = await fakeBridge(t, (u, body) => {
    if (u !== '/runs') return [200, { ok: true, run: { ...viewOf(f), artifactRootSet: sealed } }];
    posted.push(JSON.parse(body));
    return [
      409,
      {
        ok: false,
        error: 'run_already_exists',
        message: 'differs',
        problems: ['artifactRoot differs from the stored run'],
      },
    ];
  });
  const explain = () => explainLocal(f, url);
  const other = await explain();
  t.equal(other.exitCode, 1);
  t.match(other.stderr, /run_already_exists[\s\S]*artifactRoot differs/);
  t.notMatch(other.stdout, /^local:/m, 'nothing judged under a root the run did not seal');
  t.same(posted, [{ id: f.runId, artifactRoot: f.root }], 'the bridge was asked with the real root');
  sealed = false;
  const unsealed = await explain();
  t.equal(unsealed.exitCode, 1);
  t.match(unsealed.stderr, /has no artifact root sealed yet/);
  t.equal(posted.length, 1, 'a run without a root is not asked (that request would seal one)');
});

t.test(
  'explain: a view that left approvals out gives partial approval facts, no undecidable waiver',
  async (t) => {
    const f = await waivedFixture(t);
    let view = viewOf(f);
    const url = await fakeBridge(t, () => [200, { ok: true, run: view }]);
    const explain = () => explainLocal(f, url);
    const whole = await explain();
    t.match(whole.stdout, /^local: waivers: waiver w-rate is not tied to a human-granted approval/m);
    t.match(
      whole.stdout,
      /w-rate is not tied to a human-granted approval.*\n {2}fix: see docs\/next-steps.md#waivers$/m,
    );
    t.notMatch(whole.stderr, /partial/);

    view = viewOf(f, { approvalsOmitted: 7 });
    const part = await explain();
    t.notMatch(part.stdout, /waiver w-rate/, 'the waiver cannot be decided from the view: not reported');
    t.match(part.stderr, /^note: approval facts are partial: the run view left 7 approvals out/m);
  },
);
