import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { execa } from '#execa';
import { shellQuote } from '../../src/cli/proof-run.js';
import { trustPinOf } from '../../src/validators/trust-store.js';
import { cleanup, ev, secret, startTestBridge, type TestBridge } from './bridge.js';
import { runCli } from './cli.js';
import { buildFixture, type Fixture } from './finish-line-fixture.js';

/**
 * A commissioned run prepared with the real tooling on top of the known-good finish-line fixture:
 * a reviewer key from `harness review keygen` enrolled in the committed trust store (the repository
 * is HARNESS_REPO_ROOT), a project-adapter.json requiring finish-line assurance, an RCA whose two
 * phases ran the regression command at the pre-fix and post-fix commits, proof from `harness proof
 * run`, a waived layer, the review from `harness review sign`, and a v3 packet; then a bridge with
 * the real finish-line gate (validator children) serving it. The built CLI is used: spawning the
 * whole CLI through the TypeScript loader is far too slow.
 */
export const REQUIRED = ['route', 'production-readiness', 'prove', 'handoff'] as const;
export const WAIVER = {
  waiverId: 'w-rate',
  status: 'active',
  reason: 'launch behind the gateway rate limiter',
  approval: { nodeId: 'production-readiness', owner: 'cto', scope: 'rate-limiting later' },
};
/** The regression check: imports app.js and exits 0 only when add(2, 2) is 4. */
const CHECK = [
  'node',
  '--input-type=module',
  '-e',
  "import {readFileSync} from 'node:fs'; const {add} = await import('data:text/javascript,' + encodeURIComponent(readFileSync('app.js', 'utf8'))); process.exit(add(2, 2) === 4 ? 0 : 1)",
];

export interface CommissionedRun {
  f: Fixture;
  b: TestBridge;
  keyId: string;
  head: string;
  phases: { pre: number; post: number };
  /** Made with the evidence writers (CommissionedOptions.writers): nodes are then passed with `harness node pass`. */
  writers: boolean;
  /** The built CLI in the repository, with the bridge's URL and access token: exit code, stdout, stderr. */
  cli(args: string[]): Promise<{ exitCode: number; stdout: string; stderr: string }>;
}

export interface CommissionedOptions {
  keyStatus?: 'active' | 'revoked';
  /** Runs in the repository just before `harness proof run` (files the proof runs with). */
  beforeProof?: (f: Fixture) => Promise<void>;
  /** Merged into `finishLineAssurance` of the adapter. */
  assurance?: Record<string, unknown>;
  /**
   * Nothing hand-written: the reviewer enrolled with `harness review enroll` (and committed with the
   * git commands it prints, the bridge started with the pin it prints), the route from `harness
   * route write`, the roster from the example in `harness review sign --help`, the packet from
   * `harness packet write`; driveToCompletion then passes each node with `harness node pass`.
   */
  writers?: boolean;
}

export async function commissionedRun(
  t: { teardown(fn: () => unknown): void },
  opts: CommissionedOptions = {},
): Promise<CommissionedRun> {
  const f = await buildFixture(t);
  const base = join(f.repo, '..');
  const cliEnv = { PATH: process.env['PATH'] ?? '', HOME: base, HARNESS_REPO_ROOT: f.repo };
  const harness = async (args: string[]) => {
    const r = await runCli(args, cliEnv, f.repo);
    if (r.exitCode !== 0) throw new Error(`harness ${args[0]} ${args[1]}: ${r.stderr}`);
    return r.stdout;
  };

  const keys = join(base, 'keys');
  await mkdir(keys);
  const entry = JSON.parse(
    await harness(['review', 'keygen', '--out', keys, '--actor-id', 'reviewer-actor']),
  );
  const pin = opts.writers
    ? await enrolWithTheWriter(harness, join(keys, `${entry.keyId}.pub.pem`), entry.keyId, f.repo)
    : await enrolByHand(f, { ...entry, status: opts.keyStatus ?? 'active' });
  const head = await f.git('rev-parse', 'HEAD');

  const phases = { pre: await regressionAt(f, f.preFix), post: await regressionAt(f, head) };
  await f.mutate('rca/rca.json', (rca) => {
    rca.regression.command = shellQuote(CHECK);
    for (const [phase, commit, exitCode] of [
      ['preFix', f.preFix, phases.pre],
      ['postFix', head, phases.post],
    ] as const) {
      Object.assign(rca[phase], { commit, exitCode, command: shellQuote(CHECK) });
    }
  });
  if (opts.writers) {
    await harness([
      ...['route', 'write', f.runId, '--artifact-root', f.root, '--replace'],
      ...['--work-type', 'bug', '--goal', 'add() adds', '--summary', 'fix the add bug'],
    ]);
  }
  await opts.beforeProof?.(f);
  await harness(['proof', 'run', '--run', f.runId, '--artifact-root', f.root, '--', ...CHECK]);
  await f.write('project-adapter.json', {
    runtime: { requiredNodes: [...REQUIRED] },
    finishLineAssurance: { required: true, ...opts.assurance },
  });
  await f.mutate('production/layer-assessment.json', (d) => {
    Object.assign(
      d.layers.find((l: { layer: string }) => l.layer === 'rate-limiting'),
      { status: 'waived', waiverId: WAIVER.waiverId },
    );
  });
  const rosterFile = join(keys, 'roster.json');
  const roster = opts.writers ? rosterExample(await harness(['review', 'sign', '--help'])) : f.roster;
  await writeFile(rosterFile, JSON.stringify(roster));
  await harness([
    ...['review', 'sign', '--run', f.runId, '--artifact-root', f.root, '--roster', rosterFile],
    ...['--key', join(keys, `${entry.keyId}.key.pem`), '--key-id', entry.keyId],
  ]);
  if (opts.writers) {
    const waivers = join(keys, 'waivers.json');
    await writeFile(waivers, JSON.stringify([WAIVER]));
    await harness(['packet', 'write', f.runId, '--artifact-root', f.root, '--waivers', waivers]);
  } else {
    await f.repack((p) => {
      p.subject.commit = head;
      p.waivers.push(WAIVER);
    });
  }

  const dir = await mkdtemp(join(tmpdir(), 'hb-commissioned-'));
  const b = await startTestBridge(
    {
      dir,
      repo: f.repo,
      dataDir: join(dir, 'data'),
      artifactRoot: f.root,
      env: {
        PATH: process.env['PATH'] ?? '',
        HOME: dir,
        HARNESS_BRIDGE_INTEGRITY_KEY: secret(),
        HARNESS_BRIDGE_ACCESS_TOKEN: secret(),
        HARNESS_HUMAN_APPROVAL_TOKEN: secret(),
        HARNESS_REVIEW_TRUST_SHA256: pin,
        HARNESS_REPO_ROOT: f.repo,
        HARNESS_DATA_DIR: join(dir, 'data'),
        HARNESS_BRIDGE_PORT: '0',
        HARNESS_WORKERS: '2',
      },
    },
    { realGate: true },
  );
  t.teardown(() => cleanup(b));
  const bridgeEnv = {
    HARNESS_BRIDGE_URL: b.url,
    HARNESS_BRIDGE_ACCESS_TOKEN: b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!,
  };
  const cli = (args: string[]) => runCli(args, { ...cliEnv, ...bridgeEnv }, f.repo);
  return { f, b, keyId: entry.keyId, head, phases, writers: opts.writers === true, cli };
}

/** The keygen entry written into the fixture's trust store by hand and committed; its pin. */
async function enrolByHand(f: Fixture, key: Record<string, unknown>): Promise<string> {
  const store = { schema: 'harness.review-trust.v1', keys: [key] };
  await writeFile(join(f.repo, 'controls/review-trust.v1.json'), `${JSON.stringify(store, null, 2)}\n`);
  await f.git('commit', '-q', '-am', 'enrol reviewer');
  return trustPinOf(store);
}

/**
 * `harness review enroll`, then the git commands it prints, run as printed: the pin it prints is the
 * one the bridge starts with, so a wrong pin or a wrong command fails the run's completion.
 */
async function enrolWithTheWriter(
  harness: (args: string[]) => Promise<string>,
  publicKey: string,
  keyId: string,
  repo: string,
): Promise<string> {
  const out = await harness([
    ...['review', 'enroll', '--key-id', keyId, '--public-key', publicKey, '--allow', 'alice'],
  ]);
  const lines = out.trim().split('\n');
  const gitLines = lines.filter((l) => l.startsWith('git '));
  if (gitLines.length !== 2) throw new Error(`review enroll printed ${out}`);
  for (const line of gitLines) await execa('sh', ['-c', line], { cwd: repo });
  const pin = /^HARNESS_REVIEW_TRUST_SHA256=([0-9a-f]{64})$/.exec(lines.at(-1) ?? '')?.[1];
  if (pin === undefined) throw new Error(`review enroll printed no pin: ${out}`);
  return pin;
}

/** The example roster printed by `harness review sign --help`, as a user would copy it. */
export function rosterExample(help: string): unknown {
  const from = help.indexOf('{', help.indexOf('Example:'));
  const to = help.indexOf('\n  }', from);
  if (from < 0 || to < 0) throw new Error('review sign --help shows no example roster');
  return JSON.parse(help.slice(from, to + 4));
}

/** Runs the regression check in a detached worktree at `commit` and returns its real exit code. */
async function regressionAt(f: Fixture, commit: string): Promise<number> {
  const dir = join(f.repo, '..', `wt-${commit.slice(0, 12)}`);
  await f.git('worktree', 'add', '-q', '--detach', dir, commit);
  try {
    const r = await execa(CHECK[0]!, CHECK.slice(1), {
      cwd: dir,
      reject: false,
      extendEnv: false,
      env: { PATH: process.env['PATH'] ?? '' },
    });
    return r.exitCode ?? -1;
  } finally {
    await f.git('worktree', 'remove', '--force', dir);
    await rm(dir, { recursive: true, force: true });
  }
}

/** Posts one event; every step of the happy path must be accepted. */
export async function post(b: TestBridge, runId: string, body: object, human = false) {
  const headers: Record<string, string> = human
    ? { 'x-harness-human-token': b.t.env['HARNESS_HUMAN_APPROVAL_TOKEN']! }
    : {};
  return b.req('POST', `/runs/${runId}/events`, body, headers);
}

/**
 * Drives the run over HTTP: created with the artifact root (the adapter is found there), each
 * required node entered, its artifact recorded and passed; the waiver's approval requested and
 * granted by a human with both tokens. Returns the answer to run.completed.
 */
export async function driveAndComplete(c: CommissionedRun) {
  await driveToCompletion(c);
  return post(c.b, c.f.runId, ev({ type: 'run.completed', nodeId: 'handoff', status: 'passed' }));
}

/** driveAndComplete up to (not including) run.completed. */
export async function driveToCompletion(c: CommissionedRun) {
  const { b, f } = c;
  const ok = async (body: object, human = false) => {
    const r = await post(b, f.runId, body, human);
    if (r.status !== 201) throw new Error(`${JSON.stringify(body)}: ${r.status} ${JSON.stringify(r.body)}`);
  };
  await ok(ev({ type: 'run.created', artifactRoot: f.root }));
  const { nodeId, owner, scope } = WAIVER.approval;
  if (c.writers) {
    const approval = { nodeId, approvalOwner: owner, approvalScope: scope };
    await ok(ev({ type: 'approval.requested', status: 'needs_approval', ...approval }));
    await ok(ev({ type: 'approval.granted', actor: 'human', ...approval }), true);
    for (const id of REQUIRED) {
      const r = await c.cli(['node', 'pass', f.runId, id]);
      if (r.exitCode !== 0) throw new Error(`harness node pass ${id}: ${r.stderr}`);
    }
    return;
  }
  for (const id of REQUIRED) {
    await ok(ev({ nodeId: id }));
    await ok(ev({ type: 'artifact.written', nodeId: id, artifact: f.facts.config.artifactByNode[id] }));
    if (id === nodeId) {
      const approval = { nodeId, approvalOwner: owner, approvalScope: scope };
      await ok(ev({ type: 'approval.requested', status: 'needs_approval', ...approval }));
      await ok(ev({ type: 'approval.granted', actor: 'human', ...approval }), true);
    }
    await ok(ev({ type: 'gate.fired', nodeId: id, nodeState: 'passed', status: 'passed' }));
  }
}

/** Completes the run over HTTP and checks the view: completed, commissioned, the waiver's approval granted. */
export async function completed(t: Test, c: CommissionedRun) {
  t.not(c.phases.pre, 0, 'the regression check really fails at the pre-fix commit');
  t.equal(c.phases.post, 0, 'and passes at the post-fix commit');
  const done = await driveAndComplete(c);
  t.equal(done.status, 201, JSON.stringify(done.body));
  const got = await c.b.req('GET', `/runs/${c.f.runId}`);
  t.equal(got.body.run.status, 'completed');
  t.equal(got.body.run.commissioned, true, 'the adapter in the artifact root commissioned the run');
  t.match(got.body.run.approvals, [{ status: 'granted', owner: 'cto' }]);
}

/** GET and the listing show `quarantined` with a matching reason; a write gets 409 and leaves the journal as it was. */
export async function expectQuarantined(t: Test, c: CommissionedRun, reason: RegExp) {
  const { b, f } = c;
  const got = await b.req('GET', `/runs/${f.runId}`);
  t.equal(got.status, 200);
  t.equal(got.body.run.status, 'quarantined');
  t.ok(
    got.body.run.quarantine.reasons.some((r: string) => reason.test(r)),
    `a reason matches ${reason}: ${JSON.stringify(got.body.run.quarantine.reasons)}`,
  );
  const list = await b.req('GET', '/runs');
  t.equal(
    list.body.runs.find((r: { id: string }) => r.id === f.runId)?.status,
    'quarantined',
    'listing agrees',
  );
  const before = await b.journal(f.runId);
  const write = await post(b, f.runId, ev({ nodeId: 'handoff' }));
  t.equal(write.status, 409);
  t.equal(write.body.error, 'run_quarantined');
  t.ok(before.equals(await b.journal(f.runId)), 'journal unchanged');
  return got.body;
}
