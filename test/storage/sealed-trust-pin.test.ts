import { spawn } from 'node:child_process';
import { access, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { StartupError } from '../../src/storage/lease.js';
import { runPaths } from '../../src/storage/paths.js';
import { readConfig, writeConfig } from '../../src/storage/run-files.js';
import {
  cleanup,
  ev,
  makeTestEnv,
  makeTrustRepo,
  startTestBridge,
  startupFailure,
  type TestEnv,
} from '../helpers/bridge.js';
import { CLI, exitOf } from '../helpers/cli.js';
import { expectRejected } from '../helpers/expect.js';

/**
 * SPEC Errors 7 and Authentication 5, CONTRACT 7: each run's sealed run-config.json records the
 * review-trust pin the bridge had when the run was created. A data directory holding a run sealed
 * under another pin stops startup (one line naming the variable and the runs, exit code 2). A
 * config sealed under another pin that appears after startup quarantines its run when opened.
 */

/** A data directory with one run created under the original pin, and a rotated, committed pin. */
async function rotatedPin(): Promise<{ te: TestEnv; oldPin: string; te2: TestEnv }> {
  const te = await makeTestEnv();
  const oldPin = te.env['HARNESS_REVIEW_TRUST_SHA256']!;
  const first = await startTestBridge(te);
  await first.req('POST', '/runs', { id: 'sealed-old', title: 'old pin' });
  await first.req('POST', '/runs/sealed-old/events', ev({ id: 'old-0' }));
  await first.close();
  const newPin = await makeTrustRepo(te.repo, {
    schema: 'harness.review-trust.v1',
    description: 'rotated after the run was created',
    keys: [],
  });
  return { te, oldPin, te2: { ...te, env: { ...te.env, HARNESS_REVIEW_TRUST_SHA256: newPin } } };
}

t.test('a run sealed under another trust pin stops startup; the old pin starts again', async (t) => {
  const { te, oldPin, te2 } = await rotatedPin();
  t.not(te2.env['HARNESS_REVIEW_TRUST_SHA256'], oldPin, 'the committed trust store change moves the pin');
  const journal = runPaths(te.dataDir, 'sealed-old').journal;
  const before = await readFile(journal);

  const err = await startupFailure({ env: te2.env });
  t.ok(err instanceof StartupError, `refused with a StartupError (${String(err)})`);
  const message = err instanceof Error ? err.message : '';
  t.ok(message.includes('HARNESS_REVIEW_TRUST_SHA256'), `names the variable: ${message}`);
  t.ok(message.includes('sealed-old'), 'names the run');
  t.match(message, /archive/, 'says what to do');
  t.notOk(message.includes('\n'), 'one line');
  t.ok((await readFile(journal)).equals(before), 'the journal is unchanged');
  await t.rejects(access(join(te.dataDir, 'bridge.lease')), 'no lease left behind');
  await t.rejects(access(join(te.dataDir, 'recovery.mutex')), 'no mutex left behind');

  // Through the CLI: exit code 2 and one line on stderr (CONTRACT 8). Needs `npm run build`.
  const child = spawn(process.execPath, [CLI, 'bridge'], { env: te2.env, stdio: ['ignore', 'pipe', 'pipe'] });
  const { code, stderr } = await exitOf(child);
  t.equal(code, 2, stderr);
  t.equal(stderr.trimEnd().split('\n').length, 1, stderr);
  t.ok(stderr.includes('HARNESS_REVIEW_TRUST_SHA256') && stderr.includes('sealed-old'), stderr);

  // Restoring the pin the run was sealed under (the operator's other way out) serves it again.
  await makeTrustRepo(te.repo);
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  const got = await b.req('GET', '/runs/sealed-old');
  t.equal(got.body['run']?.status, 'running', 'the run is served under its own pin');
});

t.test('a config sealed under another pin after startup quarantines its run when opened', async (t) => {
  const te = await makeTestEnv();
  // An open-run cache of one: creating the second run evicts the first, so reading it reopens it.
  const b = await startTestBridge(te, { storage: { cacheSize: 1 } });
  t.teardown(() => cleanup(b));
  t.equal((await b.req('POST', '/runs/swapped/events', ev({ id: 's-0' }))).status, 201);
  t.equal((await b.req('POST', '/runs/other/events', ev({ id: 'o-0' }))).status, 201);

  const key = Buffer.from(te.env['HARNESS_BRIDGE_INTEGRITY_KEY']!);
  const path = runPaths(te.dataDir, 'swapped').config;
  const config = await readConfig(path, key);
  await writeConfig(path, key, { ...config, trustPin: 'f'.repeat(64) });

  const got = await b.req('GET', '/runs/swapped');
  t.equal(got.status, 200, JSON.stringify(got.body).slice(0, 300));
  t.equal(got.body['run']?.status, 'quarantined', 'the run is quarantined');
  const reasons: unknown = got.body['run']?.quarantine?.reasons;
  t.ok(
    Array.isArray(reasons) && reasons.some((r) => typeof r === 'string' && /trust pin/i.test(r)),
    `the reason names the trust pin: ${JSON.stringify(reasons)}`,
  );
  await expectRejected(
    t,
    b,
    'swapped',
    () => b.req('POST', '/runs/swapped/events', ev({ id: 's-1' })),
    409,
    'run_quarantined',
  );
  // The other run, and new runs, are served.
  t.equal((await b.req('POST', '/runs/other/events', ev({ id: 'o-1' }))).status, 201);
  t.equal((await b.req('POST', '/runs/fresh/events', ev({ id: 'f-0' }))).status, 201);
});
