import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { CLI, ROOT } from '../helpers/paths.js';

/**
 * `harness --version` prints package.json's version, the one a release is cut under, also when
 * the command is the link `npm link` puts on PATH and runs from another directory.
 */
const expected = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')).version as string;
const run = (file: string, args: string[], cwd: string) =>
  promisify(execFile)(process.execPath, [file, ...args], { cwd, env: { PATH: process.env['PATH'] } });

t.test('--version and -V print the package version and exit 0', async (t) => {
  t.match(expected, /^\d+\.\d+\.\d+/);
  for (const flag of ['--version', '-V']) {
    const r = await run(CLI, [flag], ROOT);
    t.equal(r.stdout, `${expected}\n`, flag);
    t.equal(r.stderr, '', flag);
  }
});

t.test('through a link in another directory, as npm link installs it', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'harness-version-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const link = join(dir, 'harness');
  await symlink(CLI, link);
  const r = await run(link, ['--version'], dir);
  t.equal(r.stdout, `${expected}\n`);
});
