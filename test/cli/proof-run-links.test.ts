import { lstat, mkdir, mkdtemp, readdir, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { execa } from '#execa';
import { CLI } from '../helpers/paths.js';

/**
 * `harness proof run` writes proof/proof.json through the evidence tools' atomic writer
 * (src/cli/evidence-tools.ts writeArtifactAtomic). The artifact root is the agent's: a `proof`
 * directory swapped for a link would carry the temp file and the rename outside the root, and a
 * link planted at proof.json would be replaced by the proof while the run's claim goes elsewhere.
 * Both are refused (exit 1), and nothing is written outside the root. Runs the built CLI.
 */
const base = await realpath(await mkdtemp(join(tmpdir(), 'harness-proof-links-')));
t.teardown(() => rm(base, { recursive: true, force: true }));

/** `<name>/artifacts` (the root) and `<name>/outside`, beside it. */
async function rootAndOutside(name: string): Promise<{ root: string; outside: string }> {
  const root = join(base, name, 'artifacts');
  const outside = join(base, name, 'outside');
  await mkdir(root, { recursive: true });
  await mkdir(outside);
  return { root, outside };
}

const proofRun = (root: string) =>
  execa(
    process.execPath,
    [CLI, 'proof', 'run', '--run', 'run-links', '--artifact-root', root, '--', 'node', '-e', ''],
    {
      reject: false,
      extendEnv: false,
      // Not a git repository: the proof carries no subject, and nothing else is read.
      env: { PATH: process.env['PATH'] ?? '', HOME: base, HARNESS_REPO_ROOT: base },
    },
  );

t.test('a proof/ directory that is a symbolic link is refused; nothing lands outside the root', async (t) => {
  const { root, outside } = await rootAndOutside('dir-link');
  await symlink(outside, join(root, 'proof'));
  const r = await proofRun(root);
  t.equal(r.exitCode, 1, r.stderr);
  t.match(r.stderr, /proof\/proof\.json: proof is not a plain directory/);
  t.same(await readdir(outside), [], 'no proof and no temp file written through the link');
  t.ok((await lstat(join(root, 'proof'))).isSymbolicLink(), 'the link itself is left alone');

  // The control: the same command under a plain proof/ writes the proof.
  const plain = await rootAndOutside('dir-plain');
  await mkdir(join(plain.root, 'proof'));
  const ok = await proofRun(plain.root);
  t.equal(ok.exitCode, 0, ok.stderr);
  t.equal(JSON.parse(await readFile(join(plain.root, 'proof/proof.json'), 'utf8')).status, 'passed');
});

t.test(
  'a proof.json that is a symbolic link is refused; the link and its target are untouched',
  async (t) => {
    const { root, outside } = await rootAndOutside('leaf-link');
    await mkdir(join(root, 'proof'));
    await writeFile(join(outside, 'victim.json'), 'untouched');
    await symlink(join(outside, 'victim.json'), join(root, 'proof/proof.json'));
    const r = await proofRun(root);
    t.equal(r.exitCode, 1, r.stderr);
    t.match(r.stderr, /proof\/proof\.json is a symbolic link/);
    t.ok((await lstat(join(root, 'proof/proof.json'))).isSymbolicLink(), 'the link was not replaced');
    t.equal(await readFile(join(outside, 'victim.json'), 'utf8'), 'untouched', 'its target was not written');
    t.same(await readdir(join(root, 'proof')), ['proof.json'], 'the temp file was removed');
    t.same(await readdir(outside), ['victim.json']);
  },
);
