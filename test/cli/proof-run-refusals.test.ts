import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { execa } from '#execa';
import { secret } from '../helpers/bridge.js';
import { CLI } from '../helpers/cli.js';

/**
 * `harness proof run` runs a command with a scrubbed environment and records proof/proof.json. No
 * bridge credential ever reaches the command or the proof, and the proof binds a canonical run ID:
 * naming a credential with --env, passing a credential's value in an argument, or a --run that is
 * not a canonical run ID is a usage error (exit 2, one line) before the command runs. Each refusal
 * is set against the same invocation with that one thing made harmless, which does run the command
 * and write the proof. Needs `npm run build`.
 */
const CREDENTIALS = [
  'HARNESS_BRIDGE_INTEGRITY_KEY',
  'HARNESS_BRIDGE_ACCESS_TOKEN',
  'HARNESS_HUMAN_APPROVAL_TOKEN',
] as const;

/**
 * A fresh artifact root and a marker path: the proof command writes the marker (with the
 * HARNESS_PROOF_NOTE it was given), so its absence proves the command never ran. The environment is
 * a shell that sourced the bridge's dev.env.
 */
async function workspace(t: Test) {
  const dir = await mkdtemp(join(tmpdir(), 'harness-proof-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const root = join(dir, 'artifacts');
  await mkdir(root);
  const marker = join(dir, 'ran');
  const env: Record<string, string> = {
    PATH: process.env['PATH'] ?? '',
    HOME: dir,
    HARNESS_REPO_ROOT: dir,
    HARNESS_PROOF_NOTE: 'not a credential',
  };
  for (const name of CREDENTIALS) env[name] = secret();
  const proof = (args: { run?: string; env?: string[]; extra?: string }) =>
    execa(
      process.execPath,
      [
        CLI,
        'proof',
        'run',
        '--run',
        args.run ?? 'run-1',
        '--artifact-root',
        root,
        ...(args.env ? ['--env', ...args.env] : []),
        '--',
        process.execPath,
        '-e',
        "require('node:fs').writeFileSync(process.argv[1], process.env.HARNESS_PROOF_NOTE ?? '')",
        marker,
        args.extra ?? 'harmless',
      ],
      { extendEnv: false, env, reject: false, stdin: 'ignore' },
    );
  const proofFile = join(root, 'proof', 'proof.json');
  return { env, marker, proofFile, proof };
}

t.test('--env naming a bridge credential is refused: exit 2, the command never runs', async (t) => {
  const allowed = await workspace(t);
  const ok = await allowed.proof({ env: ['HARNESS_PROOF_NOTE'] });
  t.equal(ok.exitCode, 0, `--env HARNESS_PROOF_NOTE: ${ok.stderr}`);
  t.equal(
    await readFile(allowed.marker, 'utf8'),
    'not a credential',
    'a variable that is no credential is passed, and the command runs',
  );
  t.equal(JSON.parse(await readFile(allowed.proofFile, 'utf8')).status, 'passed');

  // Each name literally: the list the command checks must hold all three.
  for (const name of CREDENTIALS) {
    const w = await workspace(t);
    const refused = await w.proof({ env: ['HARNESS_PROOF_NOTE', name] });
    t.equal(refused.exitCode, 2, `--env ${name}: exit 2`);
    t.equal(
      refused.stderr,
      `harness: --env ${name}: credentials are never passed to a proof command`,
      `--env ${name}: one line naming it`,
    );
    t.equal(refused.stdout, '', `--env ${name}: nothing on stdout`);
    t.notOk(existsSync(w.marker), `--env ${name}: the command never ran`);
    t.notOk(existsSync(w.proofFile), `--env ${name}: no proof was written`);
  }
});

t.test(
  'an argument carrying the integrity key is refused: it never reaches the command or the proof',
  async (t) => {
    // proof run does not refuse the key in its environment (a shell that sourced dev.env), so the
    // argument check is what keeps `-- cmd "$HARNESS_BRIDGE_INTEGRITY_KEY"` out of proof.json.
    const allowed = await workspace(t);
    const ok = await allowed.proof({ extra: 'harmless' });
    t.equal(ok.exitCode, 0, ok.stderr);
    t.ok(existsSync(allowed.marker), 'with a harmless argument the command runs');
    t.match(JSON.parse(await readFile(allowed.proofFile, 'utf8')).commands[0].command, / harmless$/);

    const w = await workspace(t);
    const key = w.env['HARNESS_BRIDGE_INTEGRITY_KEY']!;
    const refused = await w.proof({ extra: `--token=${key}` });
    t.equal(refused.exitCode, 2, refused.stderr);
    t.equal(
      refused.stderr,
      'harness: an argument carries the value of HARNESS_BRIDGE_INTEGRITY_KEY; credentials are read from the environment only',
    );
    t.notOk(existsSync(w.marker), 'the command never ran');
    t.notOk(existsSync(w.proofFile), 'no proof was written');
  },
);

t.test('--run must be a canonical run ID: exit 2, the command never runs', async (t) => {
  const allowed = await workspace(t);
  const ok = await allowed.proof({ run: 'run-1' });
  t.equal(ok.exitCode, 0, ok.stderr);
  t.equal(JSON.parse(await readFile(allowed.proofFile, 'utf8')).runId, 'run-1');

  for (const run of ['..', '../run-1', 'run 1', '.run']) {
    const w = await workspace(t);
    const refused = await w.proof({ run });
    t.equal(refused.exitCode, 2, `--run ${JSON.stringify(run)}: ${refused.stderr}`);
    t.equal(refused.stderr, 'harness: --run is not a canonical run ID', `--run ${JSON.stringify(run)}`);
    t.notOk(existsSync(w.marker), `--run ${JSON.stringify(run)}: the command never ran`);
    t.notOk(existsSync(w.proofFile), `--run ${JSON.stringify(run)}: no proof was written`);
  }
});
