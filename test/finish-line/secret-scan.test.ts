import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import t, { type Test } from 'tap';
import { SECRETS_ALLOWED_PATH } from '../../src/contract/artifacts/index.js';
import { emptyState, type RunConfig } from '../../src/contract/index.js';
import { claimArtifact } from '../../src/validators/artifact-root.js';
import type { RunFacts } from '../../src/validators/facts.js';
import { runFinishLine } from '../../src/validators/finish-line.js';
import { SECRET_SCAN_MAX_BYTES, secretScan } from '../../src/validators/secret-scan.js';
import { buildFixture, failing } from '../helpers/finish-line-fixture.js';
import { githubToken, lineSha256, secretSamples } from '../helpers/secrets.js';

/**
 * The privacy check's secret scan (issue 28 item 10), as the validator child runs it: every file
 * the bridge's check verified is scanned with secretlint's recommended rules and ours; a finding is
 * named by artifact, line and rule, never by its value; only an allow-list entry naming the rule,
 * the path and the line's hash lets one through, and a `secretlint-disable` comment does not.
 */
const RUN = 'run-secrets';

/** An artifact root holding `files`, each claimed, and the digests the bridge would have verified. */
async function scanned(t: Test, files: Record<string, string>, allow?: object) {
  const root = await realpath(await mkdtemp(join(tmpdir(), 'hb-secrets-')));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const all = { ...files, ...(allow ? { [SECRETS_ALLOWED_PATH]: JSON.stringify(allow) } : {}) };
  const state = emptyState(RUN, '2025-01-01T00:00:00.000Z');
  const verified: Record<string, string | null> = {};
  for (const [path, text] of Object.entries(all)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), text);
    const claim = await claimArtifact(root, path);
    verified[path] = claim.sha256;
    if (path === SECRETS_ALLOWED_PATH) continue;
    state.artifacts[path] = {
      ...claim,
      nodeId: 'qa-break-it',
      seq: 1,
      ts: '2025-01-01T00:00:00.000Z',
      outcome: 'verified',
      failureReason: null,
      recoveryPath: null,
      skipReason: null,
    };
  }
  const facts = { runId: RUN, config: { artifactRoot: root } as RunConfig, state } as RunFacts;
  const env = { realRoot: root, repoRoot: root, trustPin: '0'.repeat(64), verified };
  return { root, facts, env, scan: () => secretScan(facts, env) };
}

const allowEntry = (ruleId: string, messageId: string, path: string, line: string) => ({
  ruleId,
  messageId,
  path,
  lineSha256: lineSha256(line),
  reason: 'a test fixture',
});

t.test('each secret family is found, named by artifact, line and rule, never by value', async (t) => {
  for (const s of secretSamples()) {
    const { scan } = await scanned(t, { 'qa/notes.md': `# notes\n${s.text}\n` });
    const problems = await scan();
    t.same(
      problems,
      [`artifact qa/notes.md line 2 holds a secret: ${s.ruleId} ${s.messageId}`],
      `${s.family} is found`,
    );
    t.notOk(problems.join('\n').includes(s.value), `${s.family}: the value is never echoed`);
  }
});

t.test('a file without secrets, public keys and placeholders pass', async (t) => {
  const { scan } = await scanned(t, {
    'handoff/final.md': [
      '# Handoff',
      'password: changeme1234',
      'password = getPassword(user)',
      'password: process.env.DB_PASSWORD',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell reference, the placeholder under test
      'db_password=${DB_PASSWORD}',
      `sha256 ${lineSha256('x')}`,
      '-----BEGIN PUBLIC KEY-----',
      'MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=',
      '-----END PUBLIC KEY-----',
    ].join('\n'),
  });
  t.same(await scan(), []);
});

t.test('a secretlint-disable comment in the artifact does not hide a secret', async (t) => {
  const token = githubToken();
  const { scan } = await scanned(t, {
    'qa/log.txt': `// secretlint-disable\n${token} // secretlint-disable-line\n// secretlint-enable\n`,
  });
  t.same(await scan(), [
    'artifact qa/log.txt line 2 holds a secret: @secretlint/secretlint-rule-github GITHUB_TOKEN',
  ]);
});

t.test('the allow-list lets through exactly the finding it names', async (t) => {
  const token = githubToken();
  const line = `example token ${token}`;
  const files = { 'qa/log.txt': `${line}\nagain ${token}\n`, 'qa/other.txt': `${line}\n` };
  const rule = ['@secretlint/secretlint-rule-github', 'GITHUB_TOKEN'] as const;
  const allow = { schema: 'harness.secrets-allowed.v1', entries: [allowEntry(...rule, 'qa/log.txt', line)] };
  const allowed = await scanned(t, files, allow);
  t.same(
    await allowed.scan(),
    [
      'artifact qa/log.txt line 2 holds a secret: @secretlint/secretlint-rule-github GITHUB_TOKEN',
      'artifact qa/other.txt line 1 holds a secret: @secretlint/secretlint-rule-github GITHUB_TOKEN',
    ],
    'line 1 of qa/log.txt is allowed; the same token on another line or in another file is not',
  );
  for (const [what, entry] of [
    ['another line hash', allowEntry(...rule, 'qa/log.txt', `${line} `)],
    ['another rule', allowEntry('@secretlint/secretlint-rule-npm', rule[1], 'qa/log.txt', line)],
    ['another message id', allowEntry(rule[0], 'GITHUB_OAUTH_TOKEN', 'qa/log.txt', line)],
  ] as const) {
    const s = await scanned(t, { 'qa/log.txt': `${line}\n` }, { ...allow, entries: [entry] });
    t.same(
      await s.scan(),
      ['artifact qa/log.txt line 1 holds a secret: @secretlint/secretlint-rule-github GITHUB_TOKEN'],
      `an entry naming ${what} allows nothing`,
    );
  }
});

t.test('an invalid allow-list is a problem and allows nothing', async (t) => {
  const token = githubToken();
  const line = `example token ${token}`;
  const entry = { ...allowEntry('@secretlint/secretlint-rule-github', 'GITHUB_TOKEN', 'a.txt', line) };
  const s = await scanned(
    t,
    { 'a.txt': `${line}\n` },
    { schema: 'harness.secrets-allowed.v1', entries: [{ ...entry, value: token }] },
  );
  const problems = await s.scan();
  t.equal(problems.length, 3, JSON.stringify(problems));
  t.match(problems[0], /^secrets-allowed\.json does not validate as harness\.secrets-allowed\.v1: /);
  t.same(problems.slice(1), [
    'artifact a.txt line 1 holds a secret: @secretlint/secretlint-rule-github GITHUB_TOKEN',
    // The allow-list is evidence too, scanned like any other file.
    'artifact secrets-allowed.json line 1 holds a secret: @secretlint/secretlint-rule-github GITHUB_TOKEN',
  ]);
  t.notOk(problems.join('\n').includes(token), 'the value is never echoed');
});

t.test('bytes other than those the bridge verified are refused, not scanned', async (t) => {
  const s = await scanned(t, { 'qa/log.txt': 'clean\n' });
  await writeFile(join(s.root, 'qa/log.txt'), `swapped in ${githubToken()}\n`);
  t.same(await s.scan(), ['qa/log.txt changed while the finish line was being checked']);
});

t.test('a file past the scan ceiling is refused with the reason', async (t) => {
  const s = await scanned(t, { 'big.log': 'x' });
  const big = Buffer.alloc(SECRET_SCAN_MAX_BYTES + 1, 'a');
  await writeFile(join(s.root, 'big.log'), big);
  s.env.verified['big.log'] = (await claimArtifact(s.root, 'big.log')).sha256;
  t.same(await s.scan(), [
    `artifact big.log cannot be scanned for secrets: big.log is larger than ${SECRET_SCAN_MAX_BYTES} bytes`,
  ]);
});

t.test('the orchestrator reports the scan after every rule, without a rule prefix', async (t) => {
  const f = await buildFixture(t, { commissioned: false, corrective: false });
  await f.write('handoff/final.md', `done; token ${githubToken()}`);
  const result = await runFinishLine(f.facts, f.env);
  t.same(failing(result), ['secret-scan']);
  t.same(result.problems, [
    'artifact handoff/final.md line 1 holds a secret: @secretlint/secretlint-rule-github GITHUB_TOKEN',
  ]);
});

t.test(
  'the allow-list is signed evidence: changed after the review, the commissioned run fails',
  async (t) => {
    const f = await buildFixture(t);
    const line = `sample ${githubToken()}`;
    await mkdir(join(f.root, 'qa'));
    await writeFile(join(f.root, 'qa/sample.txt'), `${line}\n`);
    const entry = allowEntry('@secretlint/secretlint-rule-github', 'GITHUB_TOKEN', 'qa/sample.txt', line);
    await f.write(SECRETS_ALLOWED_PATH, { schema: 'harness.secrets-allowed.v1', entries: [entry] });
    await f.resign();
    await f.repack();
    f.facts.state.artifacts['qa/sample.txt'] = {
      ...(await claimArtifact(f.root, 'qa/sample.txt')),
      nodeId: 'qa-break-it',
      seq: 2,
      ts: '2025-01-01T00:00:00.000Z',
      outcome: 'verified',
      failureReason: null,
      recoveryPath: null,
      skipReason: null,
    };
    t.same((await runFinishLine(f.facts, f.env)).problems, [], 'control: the signed allow-list is honoured');
    const review = await f.read('review/review.json');
    t.ok(
      review.inventory.some((e: { path: string }) => e.path === SECRETS_ALLOWED_PATH),
      'the signed inventory lists the allow-list',
    );
    // The agent widens the allow-list after the review signed it.
    const other = `another ${githubToken()}`;
    await writeFile(join(f.root, 'qa/sample.txt'), `${line}\n${other}\n`);
    await f.write(SECRETS_ALLOWED_PATH, {
      schema: 'harness.secrets-allowed.v1',
      entries: [entry, { ...entry, lineSha256: lineSha256(other) }],
    });
    f.facts.state.artifacts['qa/sample.txt'].sha256 = (await claimArtifact(f.root, 'qa/sample.txt')).sha256;
    const result = await runFinishLine(f.facts, f.env);
    t.same(failing(result), ['review-signature']);
    t.ok(
      result.problems.includes(`review-signature: unsigned evidence change: ${SECRETS_ALLOWED_PATH} changed`),
      JSON.stringify(result.problems),
    );
  },
);

t.test('the scan leaves nothing in the performance timeline, so its cost per file stays flat', async (t) => {
  // secretlint 12 marked every rule on every file and its profiler searched every earlier mark:
  // the bundle replaces the profiler (scripts/bundle-vendor.mjs). 300 files, the last with a secret.
  const files: Record<string, string> = {};
  for (let i = 0; i < 300; i++) files[`notes/n${i}.md`] = `note ${i}: nothing secret here\n`;
  files['notes/n299.md'] = `token: ${githubToken()}\n`;
  performance.clearMarks();
  const { scan } = await scanned(t, files);
  const problems = await scan();
  t.equal(problems.length, 1, 'the last file is still scanned and its secret found');
  t.match(problems[0], /^artifact notes\/n299\.md line 1 holds a secret: /);
  t.equal(performance.getEntriesByType('mark').length, 0, 'no mark left behind');
  t.equal(performance.getEntriesByType('measure').length, 0, 'no measure either');
});
