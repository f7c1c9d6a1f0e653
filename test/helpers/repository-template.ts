import { rmSync } from 'node:fs';
import { cp, mkdtemp, realpath } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from '#execa';

const made = new Map<string, Promise<{ repo: string; value: unknown }>>();

/**
 * A copy at `dest` of the repository `make` builds, which runs once per test process for each
 * `name`; resolves with what `make` returned. Every git child a test process starts is a fork of
 * that process, and a group file's process holds hundreds of megabytes: each fork cost it 30 to 70
 * ms of CPU, and the repositories tests made afresh (git init, add, commit, rev-parse) were most of
 * the CPU of the finish-line and storage groups (docs/performance.md, "Test suite duration"). A
 * copy holds the same bytes, so the same commits; a test that needs other ones still makes them.
 * `make` must give the same repository on every call: `name` stands for it.
 *
 * A copied file has another inode and ctime than its index entry records, so git would take every
 * tracked file for possibly modified (a sparse checkout then leaves them in place instead of
 * removing them): the copy's index is refreshed, one git child, to match its files as the
 * template's matched its own.
 */
export async function copyOfRepository<T>(
  name: string,
  make: (repo: string) => Promise<T>,
  dest: string,
): Promise<T> {
  let template = made.get(name);
  if (template === undefined) {
    template = (async () => {
      const base = await realpath(await mkdtemp(join(tmpdir(), 'harness-template-')));
      process.once('exit', () => rmSync(base, { recursive: true, force: true }));
      const repo = join(base, 'repo');
      return { repo, value: await make(repo) };
    })();
    made.set(name, template);
  }
  const { repo, value } = await template;
  await cp(repo, dest, { recursive: true });
  await execa('git', ['update-index', '-q', '--refresh'], { cwd: dest });
  return value as T;
}
