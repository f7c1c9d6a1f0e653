import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { SECRETS_ALLOWED_PATH } from '../../src/contract/artifacts/index.js';
import { cleanup, startTestBridge, type TestBridge } from '../helpers/bridge.js';
import { complete, driveToReady, expectBlocked } from '../helpers/complete-run.js';
import { writeArtifact } from '../helpers/expect.js';
import { passingAssessment, passingProof } from '../helpers/finish-line-fixture.js';
import { githubToken, lineSha256 } from '../helpers/secrets.js';

/**
 * Issue 28 item 10 through the bridge, with the finish-line gate as `harness bridge` wires it
 * (validator children): a secret of a well-known format in an artifact refuses run.completed with
 * a problem naming the artifact, the line and the rule, and the value appears in no answer, no
 * journal record, no file of the data directory and no log line. An allow-list entry for that
 * line lets the run complete; the allow-list changed afterwards quarantines it.
 */
const TS = '2025-01-01T00:00:00.000Z';
const FOUND = '@secretlint/secretlint-rule-github GITHUB_TOKEN';

/** A bridge with the real gate whose every log line (fastify's and storage's) is kept. */
async function loggedBridge(t: Test) {
  const logs: string[] = [];
  const b = await startTestBridge(undefined, {
    realGate: true,
    logger: { level: 'trace', stream: { write: (line: string) => logs.push(line) } },
    log: (line) => logs.push(line),
  });
  t.teardown(() => cleanup(b));
  return { b, logs };
}

/** The artifacts every content rule of an ordinary run accepts, and `extra` on top. */
const passing = (runId: string, extra: Record<string, string>) => ({
  'proof/proof.json': JSON.stringify(passingProof(runId, TS)),
  'production/layer-assessment.json': JSON.stringify(passingAssessment(runId, TS)),
  ...extra,
});

async function dataDirText(b: TestBridge): Promise<string> {
  let text = '';
  for (const entry of await readdir(b.t.dataDir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) text += await readFile(join(entry.parentPath, entry.name), 'latin1');
  }
  return text;
}

t.test('a token in a claimed artifact refuses run.completed without echoing it', async (t) => {
  const { b, logs } = await loggedBridge(t);
  const token = githubToken();
  await driveToReady(b, 's1', passing('s1', { 'qa/break-it-results.md': `# break it\nused ${token}\n` }));
  const { r, blocked } = await expectBlocked(t, b, 's1', 1);
  t.same(r.body.problems, [`artifact qa/break-it-results.md line 2 holds a secret: ${FOUND}`]);
  t.notOk(JSON.stringify(r.body).includes(token), 'not in the answer');
  t.notOk(JSON.stringify(blocked).includes(token), 'not in the run.blocked record');
  t.notOk((await b.journal('s1')).includes(token), 'not in the journal');
  t.notOk((await dataDirText(b)).includes(token), 'not in any file of the data directory');
  t.notOk(JSON.stringify((await b.req('GET', '/runs/s1')).body).includes(token), 'not in the run view');
  t.ok(logs.length > 0, `the bridge logged (${logs.length} lines)`);
  t.notOk(logs.join('\n').includes(token), 'not in any log line');
});

t.test('the allow-list lets the run complete; changed afterwards, the run is quarantined', async (t) => {
  const { b } = await loggedBridge(t);
  const line = `documented example ${githubToken()}`;
  const entry = {
    ruleId: '@secretlint/secretlint-rule-github',
    messageId: 'GITHUB_TOKEN',
    path: 'qa/break-it-results.md',
    lineSha256: lineSha256(line),
    reason: 'a revoked token quoted by the break-it notes',
  };
  const allow = { schema: 'harness.secrets-allowed.v1', entries: [entry] };
  await writeArtifact(b.t.artifactRoot, SECRETS_ALLOWED_PATH, JSON.stringify(allow));
  await driveToReady(b, 's2', passing('s2', { 'qa/break-it-results.md': `${line}\n` }));
  const done = await complete(b, 's2');
  t.equal(done.status, 201, JSON.stringify(done.body));
  t.equal((await b.req('GET', '/runs/s2')).body.run.status, 'completed', 'a read agrees');
  // The agent widens the allow-list after completion (here it only rewords the reason).
  const widened = { ...allow, entries: [{ ...entry, reason: 'anything goes' }] };
  await writeFile(join(b.t.artifactRoot, SECRETS_ALLOWED_PATH), JSON.stringify(widened));
  const got = await b.req('GET', '/runs/s2');
  t.equal(got.body.run.status, 'quarantined');
  t.same(got.body.run.quarantine.reasons, [
    `finish-line document ${SECRETS_ALLOWED_PATH} changed after completion`,
  ]);
});
