import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { execa } from '#execa';
import { CLI } from '../helpers/cli.js';

/**
 * `harness review keygen` writes the reviewer's private key readable by its owner only, and
 * `harness review sign` signs into review/review.json only a verdict the review schema knows and
 * roster identities that are identifiers: anything else is a usage error (exit 2, one line) and
 * no review is written. Each refusal is set against the same signing with that one value valid.
 * Needs `npm run build`.
 */
const ROSTER = {
  scout: { actorId: 'scout-1', sessionId: 'session-1', executionId: 'exec-1' },
  implementer: { actorId: 'impl-1', sessionId: 'session-2', executionId: 'exec-2' },
  verifier: { actorId: 'verifier-1', sessionId: 'session-3', executionId: 'exec-3' },
  independentReviewer: { actorId: 'reviewer-1', sessionId: 'session-4', executionId: 'exec-4', runtime: 'r' },
};

/** A fresh directory: an artifact root holding the route and proof a review cites, and `keys/`. */
async function kit(t: Test) {
  const dir = await mkdtemp(join(tmpdir(), 'harness-review-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const root = join(dir, 'artifacts');
  for (const path of ['run/route.json', 'proof/proof.json']) {
    await mkdir(join(root, path, '..'), { recursive: true });
    await writeFile(join(root, path), '{}\n');
  }
  const keys = join(dir, 'keys');
  await mkdir(keys);
  const env = { PATH: process.env['PATH'] ?? '', HOME: dir, HARNESS_REPO_ROOT: dir };
  const harness = (args: string[]) =>
    execa(process.execPath, [CLI, ...args], { extendEnv: false, env, reject: false, stdin: 'ignore' });
  const review = join(root, 'review', 'review.json');
  return { dir, root, keys, env, harness, review };
}

t.test('review keygen writes the private key for its owner only, whatever the umask', async (t) => {
  const { keys, env } = await kit(t);
  // With umask 0 nothing is taken away: the modes are exactly the ones the command asks for.
  const r = await execa(
    'sh',
    [
      '-c',
      'umask 0 && exec "$@"',
      'sh',
      process.execPath,
      CLI,
      'review',
      'keygen',
      '--out',
      keys,
      '--actor-id',
      'reviewer-1',
    ],
    { extendEnv: false, env, reject: false, stdin: 'ignore' },
  );
  t.equal(r.exitCode, 0, r.stderr);
  const { keyId } = JSON.parse(r.stdout);
  t.equal((await stat(join(keys, `${keyId}.key.pem`))).mode & 0o777, 0o600, 'the private key: 0600');
  t.equal((await stat(join(keys, `${keyId}.pub.pem`))).mode & 0o777, 0o644, 'the public key: 0644');
});

/** A key made with `review keygen`, and `review sign` with it over `k.root`. */
async function signer(k: Awaited<ReturnType<typeof kit>>) {
  const gen = await k.harness(['review', 'keygen', '--out', k.keys, '--actor-id', 'reviewer-1']);
  if (gen.exitCode !== 0) throw new Error(`review keygen: ${gen.stderr}`);
  const { keyId } = JSON.parse(gen.stdout) as { keyId: string };
  const rosterFile = join(k.dir, 'roster.json');
  return async (roster: unknown, verdict?: string) => {
    await writeFile(rosterFile, JSON.stringify(roster));
    return k.harness([
      'review',
      'sign',
      '--run',
      'run-1',
      '--artifact-root',
      k.root,
      '--key',
      join(k.keys, `${keyId}.key.pem`),
      '--key-id',
      keyId,
      '--roster',
      rosterFile,
      ...(verdict === undefined ? [] : ['--verdict', verdict]),
    ]);
  };
}

t.test('review sign takes approved or changes-requested as --verdict: anything else exits 2', async (t) => {
  const k = await kit(t);
  const sign = await signer(k);
  const ok = await sign(ROSTER, 'changes-requested');
  t.equal(ok.exitCode, 0, ok.stderr);
  t.equal(JSON.parse(await readFile(k.review, 'utf8')).verdict, 'changes-requested');
  await rm(k.review);

  for (const verdict of ['approve', 'rejected', 'APPROVED', '']) {
    const refused = await sign(ROSTER, verdict);
    t.equal(refused.exitCode, 2, `${JSON.stringify(verdict)}: ${refused.stderr}`);
    t.equal(
      refused.stderr,
      'harness: --verdict must be approved or changes-requested',
      JSON.stringify(verdict),
    );
    t.equal(refused.stdout, '', `${JSON.stringify(verdict)}: nothing on stdout`);
    t.notOk(existsSync(k.review), `${JSON.stringify(verdict)}: no review was written`);
  }
});

t.test('review sign refuses a roster identity that is not an identifier: exit 2', async (t) => {
  const k = await kit(t);
  const sign = await signer(k);
  const ok = await sign(ROSTER);
  t.equal(ok.exitCode, 0, ok.stderr);
  t.equal(JSON.parse(await readFile(k.review, 'utf8')).roster.scout.actorId, 'scout-1');
  await rm(k.review);

  // [role, field, value]: each a string, none an identifier.
  const cases: [keyof typeof ROSTER, string, string][] = [
    ['scout', 'actorId', ''],
    ['implementer', 'sessionId', 'session 2'],
    ['verifier', 'executionId', '../exec-3'],
    ['independentReviewer', 'runtime', 'r\nverdict: approved'],
    ['scout', 'actorId', `s${'x'.repeat(200)}`],
  ];
  for (const [role, field, value] of cases) {
    const roster = { ...ROSTER, [role]: { ...ROSTER[role], [field]: value } };
    const what = `${role}.${field} ${value.length > 24 ? `of ${value.length} characters` : JSON.stringify(value)}`;
    const refused = await sign(roster);
    t.equal(refused.exitCode, 2, `${what}: ${refused.stderr}`);
    t.equal(
      refused.stderr,
      `harness: --roster: role ${role} needs actorId, sessionId and executionId identifiers`,
      what,
    );
    t.notOk(existsSync(k.review), `${what}: no review was written`);
  }
});
