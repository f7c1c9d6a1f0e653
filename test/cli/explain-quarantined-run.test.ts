import t from 'tap';
import { execa } from '#execa';
import { cleanup, ev, makeTestEnv } from '../helpers/bridge.js';
import { CLI } from '../helpers/paths.js';
import { startWithQuarantinedRun } from '../helpers/quarantine.js';

/**
 * `harness explain` on a quarantined run: the bridge reads it as its summary and quarantine
 * reasons, with no completion preview, so explain prints the reasons and exits 1 (CONTRACT 8: the
 * check failed) instead of failing on the preview it does not have. Runs the built CLI.
 */
const main = CLI;

t.test('explain prints the quarantine reasons of a quarantined run and exits 1', async (t) => {
  const te = await makeTestEnv();
  const b = await startWithQuarantinedRun(t, te, 'victim', async (seeded) => {
    t.equal((await seeded.req('POST', '/runs/victim/events', ev())).status, 201);
  });
  t.teardown(() => cleanup(b));
  const got = await b.req('GET', '/runs/victim');
  t.equal(got.body['run'].status, 'quarantined');
  const reasons: string[] = got.body['run'].quarantine.reasons;
  t.ok(reasons.length > 0, 'the bridge gives reasons');

  for (const extra of [[], ['--artifact-root', te.artifactRoot]]) {
    const r = await execa(process.execPath, [main, 'explain', 'victim', ...extra], {
      reject: false,
      extendEnv: false,
      env: {
        PATH: process.env['PATH'] ?? '',
        HOME: process.env['HOME'] ?? '',
        HARNESS_BRIDGE_URL: b.url,
        HARNESS_BRIDGE_ACCESS_TOKEN: te.env['HARNESS_BRIDGE_ACCESS_TOKEN'] ?? '',
      },
    });
    t.equal(r.exitCode, 1, `explain ${extra.join(' ')}: the check failed (${r.stderr})`);
    t.equal(r.stderr, '', 'no error: the quarantine is the answer');
    t.same(
      r.stdout.split('\n').filter(Boolean),
      reasons.flatMap((q) => [`quarantined: ${q}`, '  fix: see docs/next-steps.md#quarantined']),
      'one line per quarantine reason, each with where to read what to do',
    );
  }
});
