import { execFile } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { execa } from '#execa';
import { makeTestEnv, startTestBridge, startupFailure } from '../helpers/bridge.js';
import { CLI } from '../helpers/paths.js';

/**
 * `harness review pin` prints the pin an operator sets after enrolling a reviewer: the one the
 * bridge checks the committed and the live trust store against. It prints nothing while the two
 * differ, and startup's refusal names the command.
 */
const te = await makeTestEnv();
t.teardown(() => rm(te.dir, { recursive: true, force: true }));
const STORE = join(te.repo, 'controls/review-trust.v1.json');

async function pin(env: NodeJS.ProcessEnv, ...args: string[]) {
  return promisify(execFile)(process.execPath, [CLI, 'review', 'pin', ...args], { env }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => e,
  );
}
const git = (...args: string[]) =>
  execa('git', ['-c', 'user.name=t', '-c', 'user.email=t@localhost', ...args], { cwd: te.repo });

t.test('the pin of the committed store is the one the bridge starts with', async (t) => {
  const r = await pin(te.env);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout, `HARNESS_REVIEW_TRUST_SHA256=${te.env['HARNESS_REVIEW_TRUST_SHA256']}\n`);
  const other = await pin({ PATH: te.env['PATH'] }, '--repo', te.repo);
  t.equal(other.stdout, r.stdout, '--repo names the repository without HARNESS_REPO_ROOT');
});

t.test('a store edited and not committed has no pin yet; committed, it has a new one', async (t) => {
  const store = JSON.parse(await readFile(STORE, 'utf8'));
  store.description = 'enrolled a reviewer';
  await writeFile(STORE, `${JSON.stringify(store, null, 2)}\n`);
  const edited = await pin(te.env);
  t.equal(edited.code, 1);
  t.equal(edited.stdout, '', 'no pin is printed');
  t.match(edited.stderr, /differs from its commit at HEAD: review and commit it/);
  const refused = await startupFailure({ env: te.env });
  t.match(String(refused), /does not match the live trust store .*`harness review pin` prints the pin/);

  await git('commit', '-q', '-am', 'enrol');
  const r = await pin(te.env);
  t.equal(r.code, 0, r.stderr);
  const [, value] = /^HARNESS_REVIEW_TRUST_SHA256=([0-9a-f]{64})\n$/.exec(r.stdout) ?? [];
  t.ok(value, r.stdout);
  t.not(value, te.env['HARNESS_REVIEW_TRUST_SHA256'], 'the pin moved with the store');
  const b = await startTestBridge({ ...te, env: { ...te.env, HARNESS_REVIEW_TRUST_SHA256: value! } });
  await b.close();
  t.pass('the bridge starts with the printed pin');
});

t.test('a repository without a trust store is a usage error', async (t) => {
  const r = await pin(te.env, '--repo', te.artifactRoot);
  t.equal(r.code, 2);
  t.equal(r.stdout, '');
  t.match(r.stderr, /holds no review-trust store controls\/review-trust\.v1\.json/);
});
