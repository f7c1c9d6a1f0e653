import { generateKeyPairSync } from 'node:crypto';
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { execa } from '#execa';
import { type RosterInput, signReview, writeJsonArtifact } from '../../src/cli/evidence-tools.js';
import { IGNORED_FILES_SCHEMA_ID, PRODUCTION_LAYERS } from '../../src/contract/artifacts/index.js';
import {
  DEFAULT_ARTIFACT_BY_NODE,
  emptyState,
  type NodeId,
  type RunConfig,
} from '../../src/contract/index.js';
import { claimArtifact } from '../../src/validators/artifact-root.js';
import type { FinishLineEnv, RunFacts } from '../../src/validators/facts.js';
import { type FinishLineResult, runFinishLine } from '../../src/validators/finish-line.js';
import { ignoredListingPath, listIgnoredFiles } from '../../src/validators/ignored-files.js';
import { trustPinOf } from '../../src/validators/trust-store.js';
import { copyOfRepository } from './repository-template.js';

/**
 * A known-good finish-line fixture per test: a temp git repository (a copy of one made per process)
 * with a failing pre-fix commit and a passing post-fix commit, a committed and pinned trust store
 * with an enrolled reviewer key (the same key in every fixture of a process), and an artifact root
 * (inside the repository, untracked) holding a route, proof, layer assessment, RCA, review signed
 * with the real tooling, and a v3 packet.
 */
export interface Fixture {
  runId: string;
  repo: string;
  root: string;
  facts: RunFacts;
  env: FinishLineEnv;
  keyId: string;
  privateKeyPem: string;
  publicKeyPem: string;
  preFix: string;
  postFix: string;
  roster: RosterInput;
  read(path: string): Promise<any>;
  write(path: string, value: unknown): Promise<void>;
  mutate(path: string, fn: (doc: any) => void): Promise<void>;
  resign(): Promise<void>;
  repack(fn?: (packet: any) => void): Promise<void>;
  run(): Promise<FinishLineResult>;
  rule(name: string): Promise<string[]>;
  git(...args: string[]): Promise<string>;
}

export interface FixtureOptions {
  commissioned?: boolean;
  corrective?: boolean;
}

const TS = '2025-01-01T00:00:00.000Z';
const digest = (c: string) => `sha256:${c.repeat(64)}`;

export function roster(): RosterInput {
  const r = (n: string) => ({ actorId: `${n}-actor`, sessionId: `${n}-session`, executionId: `${n}-exec` });
  return {
    scout: r('scout'),
    implementer: r('impl'),
    verifier: r('verifier'),
    independentReviewer: r('reviewer'),
  };
}

/** The commits of the fixture's repository and the reviewer key its trust store enrolls. */
interface Template {
  keyId: string;
  privateKeyPem: string;
  publicKeyPem: string;
  store: object;
  preFix: string;
  postFix: string;
}

/** Made once per test process and copied for each fixture (repository-template.ts). */
async function makeRepository(repo: string): Promise<Template> {
  await mkdir(join(repo, 'controls'), { recursive: true });
  const git = async (...args: string[]) => (await execa('git', args, { cwd: repo })).stdout.trim();
  await git('init', '-q', '-b', 'main');
  await git('config', 'user.email', 'fixture@example.invalid');
  await git('config', 'user.name', 'fixture');
  await writeFile(join(repo, '.gitignore'), 'node_modules/\n.env\n');

  const keys = generateKeyPairSync('ed25519');
  const privateKeyPem = keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const publicKeyPem = keys.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const keyId = 'reviewer-key-1';
  const store = {
    schema: 'harness.review-trust.v1',
    keys: [
      { keyId, algorithm: 'ed25519', status: 'active', publicKeyPem, allowedActorIds: ['reviewer-actor'] },
    ],
  };
  await writeFile(join(repo, 'controls/review-trust.v1.json'), JSON.stringify(store, null, 2));
  await writeFile(join(repo, 'app.js'), 'export const add = (a, b) => a - b;\n');
  await git('add', '.');
  await git('commit', '-q', '-m', 'pre-fix');
  const preFix = await git('rev-parse', 'HEAD');
  await writeFile(join(repo, 'app.js'), 'export const add = (a, b) => a + b;\n');
  await git('commit', '-q', '-am', 'fix add');
  const postFix = await git('rev-parse', 'HEAD');
  return { keyId, privateKeyPem, publicKeyPem, store, preFix, postFix };
}

export async function buildFixture(
  t: { teardown(fn: () => unknown): void },
  opts: FixtureOptions = {},
): Promise<Fixture> {
  const commissioned = opts.commissioned ?? true;
  const corrective = opts.corrective ?? true;
  const base = await realpath(await mkdtemp(join(tmpdir(), 'hb-finish-')));
  t.teardown(() => rm(base, { recursive: true, force: true }));
  const repo = join(base, 'repo');
  const root = join(repo, 'artifacts');
  const { keyId, privateKeyPem, publicKeyPem, store, preFix, postFix } = await copyOfRepository(
    'finish-line fixture',
    makeRepository,
    repo,
  );
  await mkdir(root);
  const git = async (...args: string[]) => (await execa('git', args, { cwd: repo })).stdout.trim();

  const runId = 'run-fixture-1';
  const A = DEFAULT_ARTIFACT_BY_NODE;
  const write = (path: string, value: unknown) => writeJsonArtifact(root, path, value);
  const command = 'node --test test/add.test.js';
  await write(A.route, {
    schema: 'harness.route.v1',
    routeId: 'route-1',
    runId,
    generatedAt: TS,
    workType: corrective ? 'bug' : 'feature',
    goal: { goalId: 'goal-1', runId, statement: 'add() adds' },
    summary: 'fix the add bug',
  });
  // The ignored files the proof ran with, as `harness proof run` records them.
  const listing = ignoredListingPath(A.prove);
  await write(listing, { schema: IGNORED_FILES_SCHEMA_ID, runId, files: await listIgnoredFiles(repo, root) });
  const ignored = { path: listing, sha256: (await claimArtifact(root, listing)).sha256 };
  await write(A.prove, {
    schema: 'harness.proof.v1',
    generatedAt: TS,
    runId,
    status: 'passed',
    summary: 'regression suite passes',
    commands: [{ command, exitCode: 0, startedAt: TS, completedAt: TS, outputDigest: digest('a') }],
    subject: { commit: postFix, dirty: false, ignored },
  });
  await write(A['production-readiness'], passingAssessment(runId, TS));
  if (corrective) {
    const phase = (commit: string, exitCode: number) => ({
      commit,
      command,
      environmentId: 'ci-linux-node20',
      runId,
      exitCode,
      startedAt: TS,
      completedAt: TS,
      outputDigest: digest(exitCode === 0 ? 'b' : 'c'),
    });
    await write('rca/rca.json', {
      schema: 'harness.rca.v1',
      runId,
      generatedAt: TS,
      status: 'confirmed',
      rootCause: {
        category: 'logic-error',
        summary: 'add subtracted',
        location: { path: 'app.js', symbol: 'add' },
        evidence: ['failing test before the fix'],
      },
      regression: { command, environment: { id: 'ci-linux-node20' } },
      preFix: phase(preFix, 1),
      postFix: phase(postFix, 0),
    });
  }
  await writeJsonArtifact(root, 'handoff/final.md', 'done');

  const config: RunConfig = {
    schema: 'harness.run-config.v1',
    runId,
    createdAt: TS,
    artifactRoot: root,
    adapter: null,
    trustPin: trustPinOf(store),
    commissioned,
    humanTokenDigest: '0'.repeat(64),
    requiredNodes: ['route', 'production-readiness', 'prove', 'handoff'],
    artifactByNode: { ...A },
    metadata: {},
    runMode: 'live',
    eventSource: 'bridge',
  };
  const state = emptyState(runId, TS);
  const facts: RunFacts = { runId, config, state };
  const env: FinishLineEnv = { realRoot: root, repoRoot: repo, trustPin: config.trustPin };
  const rosterIn = roster();

  const resign = async () => {
    await write(
      'review/review.json',
      await signReview({ realRoot: root, runId, roster: rosterIn, artifactByNode: A, privateKeyPem, keyId }),
    );
  };
  const repack = async (fn?: (p: any) => void) => {
    const ref = async (path: string) => ({ path, sha256: (await claimArtifact(root, path)).sha256 });
    const review = commissioned ? JSON.parse(await readFile(join(root, 'review/review.json'), 'utf8')) : null;
    const packet: any = {
      schema: 'harness.run-packet.v3',
      runId,
      generatedAt: TS,
      subject: { commit: postFix },
      route: { routeId: 'route-1', goalId: 'goal-1', artifact: await ref(A.route) },
      roles:
        review?.roster ??
        (
          await signReview({
            realRoot: root,
            runId,
            roster: rosterIn,
            artifactByNode: A,
            privateKeyPem,
            keyId,
          })
        ).roster,
      review: commissioned
        ? await ref('review/review.json')
        : { path: 'review/review.json', sha256: '0'.repeat(64) },
      assuranceLevel: 'structural',
      catalogs: [{ id: 'layers', version: '1', sha256: '1'.repeat(64) }],
      claims: [{ id: 'c1', kind: 'structural', statement: 'all required artifacts verified' }],
      waivers: [],
    };
    fn?.(packet);
    await write('run/packet.json', packet);
  };
  if (commissioned) await resign();
  if (commissioned || corrective) await repack();

  // The journal view: every required node passed and its artifact verified.
  const refreshClaims = async () => {
    for (const id of config.requiredNodes as NodeId[]) {
      state.nodes[id] = {
        state: 'passed',
        seq: 1,
        skipReason: null,
        failureReason: null,
        recoveryPath: null,
      };
      const claim = await claimArtifact(root, A[id]);
      state.artifacts[claim.path] = {
        ...claim,
        nodeId: id,
        seq: 1,
        ts: TS,
        outcome: 'verified',
        failureReason: null,
        recoveryPath: null,
        skipReason: null,
      };
    }
  };
  await refreshClaims();

  const fixture: Fixture = {
    runId,
    repo,
    root,
    facts,
    env,
    keyId,
    privateKeyPem,
    publicKeyPem,
    preFix,
    postFix,
    roster: rosterIn,
    read: async (path) => JSON.parse(await readFile(join(root, path), 'utf8')),
    write,
    mutate: async (path, fn) => {
      const doc = await fixture.read(path);
      fn(doc);
      await write(path, doc);
    },
    resign,
    repack,
    run: () => runFinishLine(facts, env),
    rule: async (name) => {
      const r = (await runFinishLine(facts, env)).rules.find((x) => x.name === name);
      if (!r) throw new Error(`rule ${name} did not run`);
      return r.problems;
    },
    git,
  };
  return fixture;
}

/** Names of the rules that reported problems. */
export function failing(result: FinishLineResult): string[] {
  return result.rules.filter((r) => r.problems.length > 0).map((r) => r.name);
}

/**
 * Asserts that `rule` failed with a problem carrying its `<rule>: ` prefix and the stable
 * `fragment`, and (when `only`) that no other rule failed: a single-field mutation trips one rule.
 */
export async function expectRule(
  t: Test,
  f: Fixture,
  rule: string,
  fragment: string,
  only = true,
): Promise<void> {
  const result = await f.run();
  const problems = result.rules.find((r) => r.name === rule)?.problems ?? [];
  t.ok(
    problems.some((p) => p.startsWith(`${rule}: `) && p.includes(fragment)),
    `${rule} reports "${fragment}" (got ${JSON.stringify(result.problems)})`,
  );
  if (only) t.same(failing(result), [rule], 'only that rule fails');
}

/** A passing harness.proof.v1 document without a subject (an ordinary run's proof). */
export function passingProof(runId: string, ts: string) {
  return {
    schema: 'harness.proof.v1',
    generatedAt: ts,
    runId,
    status: 'passed',
    summary: 'the suite passes',
    commands: [
      {
        command: 'npm test',
        exitCode: 0,
        startedAt: ts,
        completedAt: ts,
        outputDigest: `sha256:${'a'.repeat(64)}`,
      },
    ],
  };
}

/** A harness.production-readiness.v2 document with all 13 layers required and passed. */
export function passingAssessment(runId: string, generatedAt: string) {
  return {
    schema: 'harness.production-readiness.v2',
    runId,
    generatedAt,
    layers: PRODUCTION_LAYERS.map((layer) => ({
      layer,
      owner: 'team-a',
      applicability: 'required',
      status: 'passed',
      controls: ['reviewed'],
    })),
  };
}

/** A harness.authoritative-assurance.v1 document covering claim c2 of the fixture's route. */
export function assuranceFor(runId: string, level: 'semantic' | 'authoritative') {
  return {
    schema: 'harness.authoritative-assurance.v1',
    runId,
    generatedAt: '2025-01-01T00:00:00Z',
    authority: 'domain owner',
    level,
    claimIds: ['c2'],
  };
}
