import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { execa } from '#execa';
import { UsageError } from '../../src/cli/env.js';
import { ensureDevSetup, parseEnvFile } from '../../src/cli/init.js';
import { CLI } from '../helpers/cli.js';

/**
 * SPEC Authentication 7: the bridge holds all three credentials, an agent shell only the access
 * token, an approval shell the access and human tokens. `harness init` writes one file per role,
 * each readable by its owner only; a dev directory made before the role files existed gets them
 * from its dev.env, never with a new credential (the bridge and its sealed runs keep the old ones).
 */
const ACCESS = 'HARNESS_BRIDGE_ACCESS_TOKEN';
const HUMAN = 'HARNESS_HUMAN_APPROVAL_TOKEN';
const KEY = 'HARNESS_BRIDGE_INTEGRITY_KEY';
const EXPORT = 'HARNESS_BRIDGE_EXPORT_KEY';
const PUB = 'export-key.pub';

async function devDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'harness-init-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'dev');
}

const read = async (dir: string, name: string) => parseEnvFile(await readFile(join(dir, name), 'utf8'));
const modeOf = async (dir: string, name: string) => (await stat(join(dir, name))).mode & 0o777;

/** A dev.env as versions before the role files wrote it, with known values. */
async function oldDevDir(t: Test, omit: string[] = []): Promise<{ dir: string; bytes: Buffer }> {
  const dir = await devDir(t);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const env: Record<string, string> = {
    [KEY]: `key-${randomBytes(24).toString('hex')}`,
    [ACCESS]: `access-${randomBytes(24).toString('hex')}`,
    [HUMAN]: `human-${randomBytes(24).toString('hex')}`,
    HARNESS_REVIEW_TRUST_SHA256: 'a'.repeat(64),
    HARNESS_REPO_ROOT: join(dir, 'repo'),
    HARNESS_DATA_DIR: join(dir, 'runs'),
  };
  const lines = Object.entries(env).filter(([k]) => !omit.includes(k));
  const text = `# harness-bridge development credentials (mode 0600). Never commit this file.\n${lines.map(([k, v]) => `${k}=${v}`).join('\n')}\n`;
  await writeFile(join(dir, 'dev.env'), text, { mode: 0o600 });
  return { dir, bytes: await readFile(join(dir, 'dev.env')) };
}

t.test(
  'a fresh init writes dev.env, agent.env and approve.env, mode 0600, each with its keys only',
  async (t) => {
    const dir = await devDir(t);
    const setup = await ensureDevSetup(dir);
    t.same(
      setup.files.map((f) => [f.path, f.created]),
      ['dev.env', 'agent.env', 'approve.env', PUB].map((n) => [join(dir, n), true]),
    );
    for (const name of ['dev.env', 'agent.env', 'approve.env']) t.equal(await modeOf(dir, name), 0o600, name);
    t.equal(await modeOf(dir, PUB), 0o644, 'the public half is readable by anyone');
    const dev = await read(dir, 'dev.env');
    t.same(Object.keys(dev).sort(), [
      ACCESS,
      EXPORT,
      KEY,
      'HARNESS_DATA_DIR',
      HUMAN,
      'HARNESS_REPO_ROOT',
      'HARNESS_REVIEW_TRUST_SHA256',
    ]);
    t.equal(new Set([dev[KEY], dev[ACCESS], dev[HUMAN]]).size, 3, 'three distinct credentials');
    t.same(await read(dir, 'agent.env'), { [ACCESS]: dev[ACCESS] }, 'agent shell: the access token only');
    t.same(
      await read(dir, 'approve.env'),
      { [ACCESS]: dev[ACCESS], [HUMAN]: dev[HUMAN] },
      'approval shell: the access and human tokens only',
    );
    t.same(
      (await readdir(dir)).sort(),
      ['agent.env', 'approve.env', 'dev.env', PUB, 'repo'],
      'no temp file left',
    );
  },
);

t.test(
  'an old dev dir (dev.env only) gets the role files and the export key, no other credential made',
  async (t) => {
    const { dir, bytes } = await oldDevDir(t);
    const old = parseEnvFile(bytes.toString('utf8'));
    const setup = await ensureDevSetup(dir);
    t.equal(setup.created, false);
    t.same(
      setup.files.map((f) => [f.path, f.created, f.added]),
      [
        [join(dir, 'dev.env'), false, EXPORT],
        [join(dir, 'agent.env'), true, undefined],
        [join(dir, 'approve.env'), true, undefined],
        [join(dir, PUB), true, undefined],
      ],
    );
    const { [EXPORT]: added, ...kept } = await read(dir, 'dev.env');
    t.same(kept, old, 'every other dev.env entry unchanged');
    t.ok(added && added.length > 40, 'the export key added');
    t.equal(await modeOf(dir, 'dev.env'), 0o600, 'dev.env still readable by its owner only');
    t.same(setup.env, { ...old, [EXPORT]: added });
    t.same(await read(dir, 'agent.env'), { [ACCESS]: old[ACCESS] });
    t.same(await read(dir, 'approve.env'), { [ACCESS]: old[ACCESS], [HUMAN]: old[HUMAN] });
    for (const name of ['agent.env', 'approve.env']) t.equal(await modeOf(dir, name), 0o600, name);
    t.same(
      (await readdir(dir)).sort(),
      ['agent.env', 'approve.env', 'dev.env', PUB],
      'no trust store made again',
    );

    const agent = await readFile(join(dir, 'agent.env'));
    const dev = await readFile(join(dir, 'dev.env'));
    const again = await ensureDevSetup(dir);
    t.same(
      again.files.map((f) => [f.created, f.added]),
      [
        [false, undefined],
        [false, undefined],
        [false, undefined],
        [false, undefined],
      ],
      'a later run keeps every file',
    );
    t.ok((await readFile(join(dir, 'agent.env'))).equals(agent));
    t.ok((await readFile(join(dir, 'dev.env'))).equals(dev), 'the export key is added once');
    t.equal(again.exportKey.keyId, setup.exportKey.keyId);
  },
);

t.test('a dev.env without a token a role file needs is refused, never filled with a new one', async (t) => {
  const { dir, bytes } = await oldDevDir(t, [HUMAN]);
  await t.rejects(ensureDevSetup(dir), {
    constructor: UsageError,
    message: /has no HARNESS_HUMAN_APPROVAL_TOKEN/,
  });
  t.notOk((await readdir(dir)).includes('approve.env'), 'approve.env not written');
  t.ok((await readFile(join(dir, 'dev.env'))).equals(bytes), 'dev.env unchanged');
});

t.test('harness init names each file it created or kept and the shell it is for', async (t) => {
  const { dir } = await oldDevDir(t);
  const init = () =>
    execa(process.execPath, [CLI, 'init', '--dir', dir], {
      extendEnv: false,
      env: { PATH: process.env['PATH'] ?? '' },
    });
  const upgrade = await init();
  const lines = upgrade.stdout.split('\n');
  t.match(
    lines[0],
    new RegExp(`^kept ${join(dir, 'dev.env')}, added ${EXPORT} to it: for the bridge \\(npm start`),
  );
  t.match(lines[1], new RegExp(`^created ${join(dir, 'agent.env')} \\(mode 0600\\): for agent shells`));
  t.match(
    lines[2],
    new RegExp(`^created ${join(dir, 'approve.env')} \\(mode 0600\\): for the approval shell`),
  );
  t.match(upgrade.stdout, `agent shell: set -a; . ${join(dir, 'agent.env')}; set +a;`);
  t.match(upgrade.stdout, `approval shell: (set -a; . ${join(dir, 'approve.env')}; set +a; harness approve`);
  t.notMatch(upgrade.stdout, /trust store/, 'nothing else made');
  t.match(
    lines[3],
    new RegExp(`^created ${join(dir, PUB)} \\(mode 0644\\): for anyone: the public half of the export key`),
  );
  t.match(upgrade.stdout, /^export key [0-9a-f]{64}, public half:\n-----BEGIN PUBLIC KEY-----\n/m);
  const dev = await read(dir, 'dev.env');
  t.ok(upgrade.stdout.includes(await readFile(join(dir, PUB), 'utf8')), 'the public half printed');
  for (const v of [dev[KEY], dev[ACCESS], dev[HUMAN], dev[EXPORT]])
    t.notOk(upgrade.stdout.includes(v ?? '?'), 'no value printed');
  t.match((await init()).stdout, new RegExp(`^kept ${join(dir, 'agent.env')}:`, 'm'));
});

t.test('harness init --dir takes a relative directory as absolute', async (t) => {
  const dir = await devDir(t);
  await mkdir(join(dir, '..'), { recursive: true });
  const r = await execa(process.execPath, [CLI, 'init', '--dir', 'rel-dev'], {
    cwd: join(dir, '..'),
    extendEnv: false,
    env: { PATH: process.env['PATH'] ?? '' },
  });
  t.equal(r.exitCode, 0, r.stderr);
  t.match(r.stdout, `\ncreated a trust store repository in ${join(dir, '..', 'rel-dev', 'repo')}\n`);
  const dev = await read(join(dir, '..', 'rel-dev'), 'dev.env');
  // dev.env is sourced from any working directory: its paths must not depend on this one.
  t.equal(dev['HARNESS_REPO_ROOT'], join(dir, '..', 'rel-dev', 'repo'));
  t.equal(dev['HARNESS_DATA_DIR'], join(dir, '..', 'rel-dev', 'runs'));
});

t.test('a development directory that cannot be made is an environment error: exit 2, one line', async (t) => {
  const dir = await devDir(t);
  await mkdir(join(dir, '..'), { recursive: true });
  // A file where the directory should be: mkdir under it fails with ENOTDIR.
  await writeFile(join(dir, '..', 'afile'), 'x');
  const under = join(dir, '..', 'afile', 'dev');
  await initRefused(
    t,
    under,
    new RegExp(`^harness: cannot set up the development directory ${under}: ENOTDIR`),
  );
});

/** Both ways in, `ensureDevSetup` and `harness init`, refuse: exit 2 and one line matching `message`. */
async function initRefused(t: Test, dir: string, message: RegExp): Promise<void> {
  await t.rejects(ensureDevSetup(dir), UsageError);
  const r = await execa(process.execPath, [CLI, 'init', '--dir', dir], {
    extendEnv: false,
    env: { PATH: process.env['PATH'] ?? '' },
    reject: false,
  });
  t.equal(r.exitCode, 2);
  t.match(r.stderr, message);
  t.equal(r.stderr.trimEnd().split('\n').length, 1, 'one line');
}

t.test('an init interrupted after its commit (no dev.env yet) is completed by the next one', async (t) => {
  const dir = await devDir(t);
  const first = await ensureDevSetup(dir);
  const pin = first.env['HARNESS_REVIEW_TRUST_SHA256'];
  for (const name of ['dev.env', 'agent.env', 'approve.env']) await rm(join(dir, name));
  // The repository still holds the committed store: committing it again would fail.
  const again = await ensureDevSetup(dir);
  t.equal(again.created, true, 'new credentials are made');
  t.equal(again.env['HARNESS_REVIEW_TRUST_SHA256'], pin, 'the pin of the store already committed');
  const log = await execa('git', ['log', '--oneline'], { cwd: join(dir, 'repo') });
  t.equal(log.stdout.trim().split('\n').length, 1, 'no second commit');
});

/** What a refused init must leave alone: every file under the dev directory and the store's history. */
async function devTree(dir: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    if (entry.isFile() && !path.includes(`${join(dir, 'repo', '.git')}/`))
      files[path] = (await readFile(path)).toString('base64');
  }
  const log = await execa('git', ['log', '--format=%H'], { cwd: join(dir, 'repo') });
  files['git log'] = log.stdout;
  return files;
}

async function refusedInit(t: Test, dir: string, message: RegExp): Promise<void> {
  const before = await devTree(dir);
  await initRefused(t, dir, message);
  t.same(await devTree(dir), before, 'nothing written, nothing committed');
}

t.test('without dev.env, init never makes new credentials over runs sealed with the lost key', async (t) => {
  const dir = await devDir(t);
  await ensureDevSetup(dir);
  await mkdir(join(dir, 'runs', 'run-1'), { recursive: true });
  await writeFile(join(dir, 'runs', 'run-1', 'events.jsonl'), '{}\n');
  await rm(join(dir, 'dev.env'));
  await refusedInit(
    t,
    dir,
    new RegExp(
      `^harness: ${join(dir, 'dev.env')} is missing but ${join(dir, 'runs')} holds runs sealed with its integrity key`,
    ),
  );
});

t.test('without dev.env, init never empties a trust store a reviewer was enrolled in', async (t) => {
  const enrolled = `${JSON.stringify({ schema: 'harness.review-trust.v1', keys: [{ keyId: 'k1' }] })}\n`;
  const store = (dir: string) => join(dir, 'repo', 'controls', 'review-trust.v1.json');
  const message = (dir: string) =>
    new RegExp(
      `^harness: ${join(dir, 'dev.env')} is missing but ${store(dir)} is not the empty development store`,
    );

  const edited = await devDir(t);
  await ensureDevSetup(edited);
  await writeFile(store(edited), enrolled);
  await rm(join(edited, 'dev.env'));
  await refusedInit(t, edited, message(edited));

  const committed = await devDir(t);
  await ensureDevSetup(committed);
  await writeFile(store(committed), enrolled);
  await execa('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qam', 'enrol k1'], {
    cwd: join(committed, 'repo'),
  });
  await rm(store(committed));
  await rm(join(committed, 'dev.env'));
  await refusedInit(t, committed, message(committed));
});

t.test('new credentials replace role files that hold the lost dev.env tokens', async (t) => {
  const dir = await devDir(t);
  const first = await ensureDevSetup(dir);
  await rm(join(dir, 'dev.env'));
  const again = await ensureDevSetup(dir);
  t.equal(again.created, true);
  t.not(again.env[ACCESS], first.env[ACCESS], 'a new access token');
  t.same(
    again.files.map((f) => f.created),
    [true, true, true, true],
    'every file written anew, the public half of the new export key too',
  );
  t.not(again.exportKey.keyId, first.exportKey.keyId, 'a new export key');
  t.same(await read(dir, 'agent.env'), { [ACCESS]: again.env[ACCESS] });
  t.same(await read(dir, 'approve.env'), { [ACCESS]: again.env[ACCESS], [HUMAN]: again.env[HUMAN] });
});

t.test(
  'export-key.pub is the public half of the export key in dev.env, written again when it is not',
  async (t) => {
    const dir = await devDir(t);
    const setup = await ensureDevSetup(dir);
    const dev = await read(dir, 'dev.env');
    const priv = createPrivateKey({ key: Buffer.from(dev[EXPORT]!, 'base64'), format: 'der', type: 'pkcs8' });
    t.equal(priv.asymmetricKeyType, 'ed25519');
    const pem = String(createPublicKey(priv).export({ type: 'spki', format: 'pem' }));
    t.equal(await readFile(join(dir, PUB), 'utf8'), pem);
    t.equal(setup.exportKey.pem, pem);

    const other = String(generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }));
    await writeFile(join(dir, PUB), other);
    const again = await ensureDevSetup(dir);
    t.same(
      again.files.map((f) => f.created),
      [false, false, false, true],
    );
    t.equal(await readFile(join(dir, PUB), 'utf8'), pem, 'derived from dev.env again');
    t.same(await read(dir, 'dev.env'), dev, 'dev.env unchanged');
  },
);

t.test('a dev.env whose export key is not an Ed25519 private key is refused, nothing written', async (t) => {
  const { dir } = await oldDevDir(t);
  const text = await readFile(join(dir, 'dev.env'), 'utf8');
  const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey;
  for (const [value, why] of [
    ['not-a-key', /is not a base64 PKCS #8 private key/],
    [rsa.export({ type: 'pkcs8', format: 'der' }).toString('base64'), /is an rsa key, not Ed25519/],
  ] as const) {
    await writeFile(join(dir, 'dev.env'), `${text}${EXPORT}=${value}\n`, { mode: 0o600 });
    const before = await readFile(join(dir, 'dev.env'));
    await initRefused(t, dir, new RegExp(`^harness: ${EXPORT} in ${join(dir, 'dev.env')} `));
    await t.rejects(ensureDevSetup(dir), { message: why });
    t.ok((await readFile(join(dir, 'dev.env'))).equals(before), 'dev.env unchanged');
    t.same(await readdir(dir), ['dev.env'], 'no role file, no public key written');
  }
});
