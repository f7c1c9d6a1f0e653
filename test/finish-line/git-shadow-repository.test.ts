import { mkdir, mkdtemp, realpath, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { execa } from '#execa';
import { changesSince, headCommit, isAncestor } from '../../src/validators/git.js';
import { commitFiles, gitIn } from '../helpers/bridge.js';

/**
 * What the shadow git directory (git-shadow.ts) takes from the agent-written `.git`: HEAD and the
 * config are read by the bridge itself, so one that is a FIFO, a directory or oversized is no
 * answer at once (a FIFO opened for reading would block the bridge until a writer came); what git
 * reads through it (packed refs) is read as git reads it; and the
 * work tree's attributes convert nothing, so an edit that converts back to the proven blob shows.
 */
async function repository(t: Test) {
  const repo = await realpath(await mkdtemp(join(tmpdir(), 'harness-shadow-')));
  t.teardown(() => rm(repo, { recursive: true, force: true }));
  const first = await commitFiles(repo, { 'a.txt': 'one\n' }, true);
  const head = await commitFiles(repo, { 'b.txt': 'two\n' });
  return { repo, first, head, git: gitIn(repo) };
}

const fifo = async (path: string) => {
  await unlink(path);
  await execa('mkfifo', [path]);
};

const unreadable: [string, (repo: string, head: string) => Promise<void>][] = [
  ['HEAD is a FIFO', (repo) => fifo(join(repo, '.git', 'HEAD'))],
  [
    'HEAD is a directory',
    async (repo) => {
      await unlink(join(repo, '.git', 'HEAD'));
      await mkdir(join(repo, '.git', 'HEAD'));
    },
  ],
  [
    'HEAD is larger than any HEAD',
    (repo, head) => writeFile(join(repo, '.git', 'HEAD'), `${head}${'\n'.repeat(5000)}`),
  ],
  ['the config is a FIFO', (repo) => fifo(join(repo, '.git', 'config'))],
];

for (const [name, arm] of unreadable) {
  t.test(`${name}: no answer, without waiting on it`, async (t) => {
    const r = await repository(t);
    await arm(r.repo, r.head);
    const started = Date.now();
    t.equal(await headCommit(r.repo), null, 'headCommit');
    t.equal(await changesSince(r.repo, r.head, null), null, 'changesSince');
    // git's own deadline is 15 s: an answer before it was not a git call that waited it out.
    t.ok(Date.now() - started < 10_000, `answered in ${Date.now() - started} ms`);
  });
}

t.test('refs packed into packed-refs are read', async (t) => {
  const r = await repository(t);
  await r.git('pack-refs', '--all');
  t.equal(await headCommit(r.repo), r.head);
  t.ok(await isAncestor(r.repo, r.first, r.head));
});

t.test('work-tree attributes convert nothing: bytes that convert back to the proven blob show', async (t) => {
  const cases: [string, string, Buffer][] = [
    ['text: CRLF line endings', '* text\n', Buffer.from('one\r\n')],
    [
      'working-tree-encoding: the same text in UTF-16',
      'a.txt working-tree-encoding=UTF-16LE\n',
      Buffer.from('one\n', 'utf16le'),
    ],
  ];
  for (const [name, attributes, bytes] of cases) {
    const r = await repository(t);
    const proven = await commitFiles(r.repo, { '.gitattributes': attributes });
    await writeFile(join(r.repo, 'a.txt'), bytes);
    t.same(await changesSince(r.repo, proven, null), ['a.txt'], name);
  }
});
