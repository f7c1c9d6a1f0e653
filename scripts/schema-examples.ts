import { PRODUCTION_LAYERS } from '../src/contract/artifacts/index.js';

/**
 * One valid example per artifact schema, published as docs/schema/examples/<id>.example.json.
 * They validate against their schema (test/finish-line/finish-line-schema-files.test.ts); hashes and the
 * signature are placeholders, so the examples show shape, not a verifiable run.
 */
const TS = '2025-01-01T00:00:00.000Z';
const RUN = 'run-2025-01-01-fix-add';
const H = (c: string) => c.repeat(64);
const PRE = 'a'.repeat(40);
const POST = 'b'.repeat(40);
const role = (n: string, evidence: { path: string; sha256: string }[]) => ({
  actorId: `${n}@team`,
  sessionId: `${n}-session-1`,
  executionId: `${n}-exec-1`,
  runtime: 'runtime-a',
  evidence,
});
const roster = {
  scout: role('scout', [{ path: 'run/route.json', sha256: H('1') }]),
  implementer: role('implementer', [{ path: 'proof/proof.json', sha256: H('2') }]),
  verifier: role('verifier', [{ path: 'proof/proof.json', sha256: H('2') }]),
  independentReviewer: role('reviewer', []),
};
const phase = (commit: string, exitCode: number) => ({
  commit,
  command: 'npm test -- test/add.test.ts',
  environmentId: 'ci-linux-node20',
  runId: RUN,
  exitCode,
  startedAt: TS,
  completedAt: TS,
  outputDigest: `sha256:${H(exitCode === 0 ? '3' : '4')}`,
});

export const SCHEMA_EXAMPLES: Record<string, unknown> = {
  'harness.proof.v1': {
    schema: 'harness.proof.v1',
    generatedAt: TS,
    runId: RUN,
    status: 'passed',
    summary: 'npm test passed',
    commands: [
      { command: 'npm test', exitCode: 0, startedAt: TS, completedAt: TS, outputDigest: `sha256:${H('5')}` },
    ],
    subject: {
      commit: POST,
      dirty: false,
      ignored: { path: 'proof/ignored-files.json', sha256: H('6') },
    },
    environment: { id: 'linux-x64-node20', platform: 'linux-x64', node: 'v20.19.0' },
  },
  'harness.production-readiness.v2': {
    schema: 'harness.production-readiness.v2',
    runId: RUN,
    generatedAt: TS,
    layers: PRODUCTION_LAYERS.map((layer) =>
      layer === 'caching-cdn'
        ? {
            layer,
            owner: 'platform',
            applicability: 'not-applicable',
            reason: 'internal API, no CDN',
            status: 'not-applicable',
            controls: [],
          }
        : {
            layer,
            owner: 'platform',
            applicability: 'required',
            status: 'passed',
            controls: ['reviewed in design'],
          },
    ),
  },
  'harness.production-readiness.v1': {
    schema: 'harness.production-readiness.v1',
    layers: PRODUCTION_LAYERS.map((layer) => ({ layer, status: 'pass' })),
  },
  'harness.rca.v1': {
    schema: 'harness.rca.v1',
    runId: RUN,
    generatedAt: TS,
    status: 'confirmed',
    rootCause: {
      category: 'logic-error',
      summary: 'add() subtracted its second argument',
      location: { path: 'src/math.ts', symbol: 'add' },
      evidence: ['test/add.test.ts fails at the pre-fix commit'],
    },
    regression: { command: 'npm test -- test/add.test.ts', environment: { id: 'ci-linux-node20' } },
    preFix: phase(PRE, 1),
    postFix: phase(POST, 0),
  },
  'harness.review.v2': {
    schema: 'harness.review.v2',
    runId: RUN,
    generatedAt: TS,
    verdict: 'approved',
    roster,
    evidenceBundleDigest: `sha256:${H('6')}`,
    inventory: [
      { path: 'proof/proof.json', sha256: H('2'), size: 512 },
      { path: 'run/route.json', sha256: H('1'), size: 300 },
    ],
    validation: { runtime: 'harness-bridge', version: '0.8' },
    signature: { keyId: 'reviewer-2025', algorithm: 'ed25519', value: `${'A'.repeat(86)}==` },
  },
  'harness.run-packet.v3': {
    schema: 'harness.run-packet.v3',
    runId: RUN,
    generatedAt: TS,
    subject: { commit: POST, repository: 'example/app' },
    route: {
      routeId: 'route-fix-add',
      goalId: 'goal-add-adds',
      artifact: { path: 'run/route.json', sha256: H('1') },
    },
    roles: roster,
    review: { path: 'review/review.json', sha256: H('7') },
    assuranceLevel: 'structural',
    catalogs: [{ id: 'production-layers', version: '2', sha256: H('8') }],
    claims: [{ id: 'claim-1', kind: 'structural', statement: 'every required artifact was verified' }],
    waivers: [],
    validation: { runtime: 'harness-bridge' },
  },
  'harness.run-packet.v2': { schema: 'harness.run-packet.v2', runId: RUN, generatedAt: TS, commit: POST },
  'harness.review-trust.v1': {
    schema: 'harness.review-trust.v1',
    description: 'Reviewers enrolled after operator review',
    keys: [
      {
        keyId: 'reviewer-2025',
        algorithm: 'ed25519',
        status: 'active',
        publicKeyPem:
          '-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n',
        allowedActorIds: ['reviewer@team'],
      },
    ],
  },
  'harness.self-heal-proposal.v1': {
    schema: 'harness.self-heal-proposal.v1',
    runId: RUN,
    generatedAt: TS,
    title: 'Gate: require the regression command in the proof',
    gap: 'the finish line accepted a proof that did not run the regression command',
    target: { repository: 'example/harness-pack', baseRef: 'main' },
    patch: { path: 'self_heal/pr.patch', sha256: H('9') },
    files: ['controls/gates.json'],
  },
  'harness.route.v1': {
    schema: 'harness.route.v1',
    routeId: 'route-fix-add',
    runId: RUN,
    generatedAt: TS,
    workType: 'bug',
    lane: 'standard',
    goal: { goalId: 'goal-add-adds', runId: RUN, statement: 'add(a, b) returns a + b' },
    summary: 'a reported arithmetic bug: corrective route with RCA',
  },
  'harness.authoritative-assurance.v1': {
    schema: 'harness.authoritative-assurance.v1',
    runId: RUN,
    generatedAt: TS,
    authority: 'payments domain owner',
    level: 'semantic',
    claimIds: ['claim-2'],
  },
  'harness.ignored-files.v1': {
    schema: 'harness.ignored-files.v1',
    runId: RUN,
    files: [
      { path: '.env', identity: 'f 64769 1835011 220 1735689600000000000 1735689600000000000' },
      {
        path: 'node_modules/left-pad/index.js',
        identity: 'f 64769 1835342 371 1735689600000000000 1735689600000000000',
      },
    ],
  },
  'harness.secrets-allowed.v1': {
    schema: 'harness.secrets-allowed.v1',
    entries: [
      {
        ruleId: '@secretlint/secretlint-rule-aws',
        messageId: 'AWSAccessKeyID',
        path: 'qa/break-it-results.md',
        lineSha256: H('5'),
        reason: 'the documented example key of the AWS documentation, quoted by a test case',
      },
    ],
  },
};
