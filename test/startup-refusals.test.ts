import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { access, mkdir, readFile, stat, utimes, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout } from 'node:timers/promises';
import t, { type Test } from 'tap';
import { readBridgeEnv } from '../src/server/env.js';
import { type StartOptions, startBridge } from '../src/server/start.js';
import { trustStoreDigest } from '../src/server/trust-pin.js';
import { acquireLease, LEASE_STALE_MS, StartupError } from '../src/storage/lease.js';
import { runPaths } from '../src/storage/paths.js';
import { cleanup, makeTestEnv, startTestBridge, startupFailure, type TestEnv } from './helpers/bridge.js';
import { CLI, exitOf } from './helpers/cli.js';

/**
 * SPEC Authentication 1 and 5, Errors 7 and CONTRACT 2 and 7: the bridge fails closed at startup,
 * with one line naming the variable or entry at fault. Each case changes one thing in a known-good
 * environment.
 */
const te: TestEnv = await makeTestEnv();
t.teardown(async () => {
  const { rm } = await import('node:fs/promises');
  await rm(te.dir, { recursive: true, force: true });
});

async function refuses(
  t: Test,
  env: Record<string, string | undefined>,
  names: string[],
  opts: Partial<StartOptions> = {},
) {
  const full = { ...te.env, ...env };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete full[k];
  const err = await startupFailure({ ...opts, env: full as NodeJS.ProcessEnv });
  t.ok(err instanceof StartupError, `refused with a StartupError (${String(err)})`);
  const message = err instanceof Error ? err.message : '';
  for (const name of names) t.ok(message.includes(name), `the message says ${name}: ${message}`);
  t.notOk(message.includes('\n'), 'one line');
  for (const cred of [
    'HARNESS_BRIDGE_INTEGRITY_KEY',
    'HARNESS_BRIDGE_ACCESS_TOKEN',
    'HARNESS_HUMAN_APPROVAL_TOKEN',
  ]) {
    if (full[cred]) t.notOk(message.includes(full[cred]!), 'no credential value in the message');
  }
}

async function starts(t: Test, env: Record<string, string>) {
  const b = await startBridge({ env: { ...te.env, ...env } });
  t.pass('started');
  await b.close();
}

const CREDS = ['HARNESS_BRIDGE_INTEGRITY_KEY', 'HARNESS_BRIDGE_ACCESS_TOKEN', 'HARNESS_HUMAN_APPROVAL_TOKEN'];

t.test('credentials', async (t) => {
  for (const name of CREDS) {
    t.test(`${name} missing, empty or short`, async (t) => {
      // Unset and empty alike are reported as missing, not as too short.
      await refuses(t, { [name]: undefined }, [name, 'is missing']);
      await refuses(t, { [name]: '' }, [name, 'is missing']);
      // CONTRACT 2: the message says "at least 32 bytes".
      await refuses(t, { [name]: 'x'.repeat(31) }, [name, 'at least 32 bytes']);
      // Bytes, not characters: 16 two-byte characters are 32 bytes; 31 ASCII bytes are not.
      await starts(t, { [name]: 'é'.repeat(16) });
      await starts(t, { [name]: 'y'.repeat(32) });
    });
  }
  for (let i = 0; i < 3; i++) {
    for (let j = i + 1; j < 3; j++) {
      const a = CREDS[i]!;
      const b = CREDS[j]!;
      t.test(`${a} equal to ${b}`, async (t) => {
        await refuses(t, { [b]: te.env[a] }, [a, b, 'pairwise distinct']);
      });
    }
  }
});

t.test('review-trust pin', async (t) => {
  const P = 'HARNESS_REVIEW_TRUST_SHA256';
  const pin = te.env[P]!;
  await refuses(t, { [P]: undefined }, [P, 'is missing']);
  await refuses(t, { [P]: '' }, [P, 'is missing']);
  // A malformed pin is named as malformed, before any store is read (docs/configuration.md).
  const malformed = [P, '64 hexadecimal characters'];
  await refuses(t, { [P]: pin.slice(1) }, malformed);
  await refuses(t, { [P]: `${pin}0` }, malformed);
  await refuses(t, { [P]: 'g'.repeat(64) }, malformed);
  await refuses(t, { [P]: pin.replace(/.$/, (c) => (c === '0' ? '1' : '0')) }, [P]);
  await refuses(t, { [P]: `${pin.slice(0, 63)}g` }, [P]);

  t.test('hexadecimal in either case is the same pin, sealed in lowercase', async (t) => {
    const mixed = [...pin].map((c, i) => (i % 2 === 0 ? c.toUpperCase() : c)).join('');
    t.not(mixed, pin, 'the spelling differs');
    t.equal(readBridgeEnv({ ...te.env, [P]: pin.toUpperCase() }).trustPin, pin);
    const dataDir = join(te.dir, 'data-pin-case');
    const b = await startBridge({ env: { ...te.env, [P]: mixed, HARNESS_DATA_DIR: dataDir } });
    const res = await b.app.inject({
      method: 'POST',
      url: '/runs',
      headers: {
        'x-harness-bridge-token': te.env['HARNESS_BRIDGE_ACCESS_TOKEN']!,
        host: new URL(b.url).host,
      },
      payload: { id: 'pin-case' },
    });
    t.equal(res.statusCode, 201, res.body);
    await b.close();
    const config = JSON.parse(await readFile(runPaths(dataDir, 'pin-case').config, 'utf8'));
    t.match(JSON.stringify(config), pin, 'the sealed pin is the lowercase spelling');
    t.notMatch(JSON.stringify(config), mixed);
    // The run created under the mixed-case spelling reopens under the lowercase one.
    await starts(t, { HARNESS_DATA_DIR: dataDir });
  });

  t.test('the pin must match both the live store and the committed store', async (t) => {
    const repo = join(te.dir, 'repo2');
    const { makeTrustRepo } = await import('./helpers/bridge.js');
    const committed = await makeTrustRepo(repo);
    const edited = `${JSON.stringify({ schema: 'harness.review-trust.v1', description: 'edited', keys: [] })}\n`;
    await writeFile(join(repo, 'controls', 'review-trust.v1.json'), edited);
    // Pin of the committed store, live store edited: refused.
    await refuses(t, { HARNESS_REPO_ROOT: repo, [P]: committed }, [P]);
    // Pin of the live (uncommitted) store: refused against the committed one.
    await refuses(t, { HARNESS_REPO_ROOT: repo, [P]: trustStoreDigest(edited) }, [P]);
  });

  t.test('a repository without a trust store, or with one that is not JSON or not committed', async (t) => {
    const empty = join(te.dir, 'no-store');
    await mkdir(empty);
    await refuses(t, { HARNESS_REPO_ROOT: empty }, ['HARNESS_REPO_ROOT']);
    const uncommitted = join(te.dir, 'uncommitted');
    await mkdir(join(uncommitted, 'controls'), { recursive: true });
    const text = await readFile(join(te.repo, 'controls', 'review-trust.v1.json'), 'utf8');
    await writeFile(join(uncommitted, 'controls', 'review-trust.v1.json'), text);
    await refuses(t, { HARNESS_REPO_ROOT: uncommitted }, ['HARNESS_REPO_ROOT']);
    const broken = join(te.dir, 'broken');
    await mkdir(join(broken, 'controls'), { recursive: true });
    await writeFile(join(broken, 'controls', 'review-trust.v1.json'), '{not json');
    // Named as unreadable, not as absent: the operator is told to fix the file, not to add one.
    await refuses(t, { HARNESS_REPO_ROOT: broken }, ['HARNESS_REPO_ROOT', 'not valid JSON']);
  });
});

t.test('loopback host only', async (t) => {
  for (const host of [
    '0.0.0.0',
    '192.168.1.10',
    '10.0.0.1',
    'example.com',
    '::',
    '127.0.0.1.nip.io',
    '256.0.0.1',
    '127.0.0.300',
    '127.256.0.1',
  ]) {
    await refuses(t, { HARNESS_BRIDGE_HOST: host }, ['HARNESS_BRIDGE_HOST']);
  }
  await starts(t, { HARNESS_BRIDGE_HOST: 'localhost' });
  await starts(t, { HARNESS_BRIDGE_HOST: '127.0.0.2' });
});

t.test('numeric variables out of range', async (t) => {
  const cases: [string, string][] = [
    ['HARNESS_BRIDGE_PORT', '65536'],
    ['HARNESS_BRIDGE_PORT', '-1'],
    ['HARNESS_BRIDGE_PORT', 'http'],
    ['HARNESS_BRIDGE_PORT', '80.5'],
    ['HARNESS_WORKERS', '0'],
    ['HARNESS_WORKERS', '65'],
    ['HARNESS_VALIDATOR_CONCURRENCY', '0'],
    ['HARNESS_VALIDATOR_CONCURRENCY', 'many'],
    ['HARNESS_VALIDATOR_CONCURRENCY', '65'],
    ['HARNESS_MAX_EVENTS_PER_RUN', '0'],
    ['HARNESS_MAX_EVENTS_PER_RUN', '1000001'],
    ['HARNESS_MAX_EVENTS_PER_RUN', '1e5'],
    ['HARNESS_ARTIFACT_MAX_BYTES', '1048575'],
    ['HARNESS_ARTIFACT_MAX_BYTES', '1099511627777'],
    ['HARNESS_ARTIFACT_MAX_BYTES', '256MiB'],
    ['HARNESS_REHASH_TIMEOUT_MS', '99'],
    ['HARNESS_REHASH_TIMEOUT_MS', '600001'],
    ['HARNESS_REHASH_TIMEOUT_MS', '-1'],
  ];
  for (const [name, value] of cases) await refuses(t, { [name]: value }, [name]);
  await starts(t, { HARNESS_MAX_EVENTS_PER_RUN: '1000000' });
  await starts(t, { HARNESS_ARTIFACT_MAX_BYTES: '1048576', HARNESS_REHASH_TIMEOUT_MS: '600000' });
});

t.test("a log level that is not one of pino's is refused, naming the variable", async (t) => {
  for (const value of ['verbose', 'INFO', 'info ', '30']) {
    const err = await startupFailure({ env: { ...te.env, HARNESS_LOG_LEVEL: value } });
    t.ok(err instanceof StartupError, String(err));
    t.match(
      (err as Error).message,
      /^HARNESS_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent$/,
    );
  }
  for (const value of ['debug', 'silent', '']) await starts(t, { HARNESS_LOG_LEVEL: value });
  // In the documented order: after the numeric ranges, before the trust pin's form.
  const both = await startupFailure({
    env: { ...te.env, HARNESS_LOG_LEVEL: 'loud', HARNESS_WORKERS: '0' },
  });
  t.match((both as Error).message, /HARNESS_WORKERS/);
  const pin = await startupFailure({
    env: { ...te.env, HARNESS_LOG_LEVEL: 'loud', HARNESS_REVIEW_TRUST_SHA256: 'not-a-pin' },
  });
  t.match((pin as Error).message, /HARNESS_LOG_LEVEL/);
});

t.test('with several faults, the first check in the documented order is the one named', async (t) => {
  // docs/configuration.md "Startup refusals": credentials, host, numeric ranges, the trust pin's
  // form, git, the trust pin against the stores, data dir.
  const P = 'HARNESS_REVIEW_TRUST_SHA256';
  const dataFile = join(te.dir, 'order-data-is-a-file');
  await writeFile(dataFile, 'x');
  // The pin's form is checked before the repository is read for its store.
  const storeless = join(te.dir, 'order-no-store');
  await mkdir(storeless, { recursive: true });
  const faults: [string, string][] = [
    ['HARNESS_BRIDGE_ACCESS_TOKEN', 'short'],
    ['HARNESS_BRIDGE_HOST', '0.0.0.0'],
    ['HARNESS_BRIDGE_PORT', '65536'],
    [P, 'not-a-pin'],
    ['HARNESS_GIT', 'git'],
    ['HARNESS_REPO_ROOT', storeless],
    ['HARNESS_DATA_DIR', dataFile],
  ];
  for (let i = 0; i + 1 < faults.length; i++) {
    const [first, firstValue] = faults[i]!;
    const [later, laterValue] = faults[i + 1]!;
    const err = await startupFailure({ env: { ...te.env, [first]: firstValue, [later]: laterValue } });
    t.ok(err instanceof StartupError, String(err));
    const message = err instanceof Error ? err.message : '';
    t.ok(message.startsWith(first), `${first} before ${later}: ${message}`);
    t.notOk(message.includes(later), `${later} is not named`);
  }
  // A pin of the right form that matches no store is still checked before the data directory.
  const wrong = te.env[P]!.replace(/.$/, (c) => (c === '0' ? '1' : '0'));
  const err = await startupFailure({ env: { ...te.env, [P]: wrong, HARNESS_DATA_DIR: dataFile } });
  t.ok(err instanceof Error && err.message.startsWith(P), String(err));
});

t.test('a port already in use is named', async (t) => {
  const first = await startTestBridge();
  t.teardown(() => cleanup(first));
  const dir = join(te.dir, 'data-port');
  await refuses(t, { HARNESS_BRIDGE_PORT: new URL(first.url).port, HARNESS_DATA_DIR: dir }, [
    'HARNESS_BRIDGE_PORT',
  ]);
  // The refused bridge released its lease: a retry on a free port is not "already leased".
  await t.rejects(access(join(dir, 'bridge.lease')), 'no lease left behind');
  await starts(t, { HARNESS_DATA_DIR: dir });
});

t.test('a data directory the bridge creates is private to its user (0700)', async (t) => {
  const dir = join(te.dir, 'created-private', 'runs');
  await starts(t, { HARNESS_DATA_DIR: dir });
  t.equal((await stat(dir)).mode & 0o777, 0o700, 'the data directory: 0700');
  t.equal((await stat(dirname(dir))).mode & 0o777, 0o700, 'so is each parent it created');
});

t.test('data directory refusals', async (t) => {
  const fresh = async (name: string) => {
    const dir = join(te.dir, name);
    await mkdir(dir, { recursive: true });
    return dir;
  };

  t.test('a legacy <RUN_ID>/run.json layout', async (t) => {
    const dir = await fresh('legacy1');
    await mkdir(join(dir, 'my-old-run'));
    await writeFile(join(dir, 'my-old-run', 'run.json'), '{"id":"my-old-run"}');
    await refuses(t, { HARNESS_DATA_DIR: dir }, ['HARNESS_DATA_DIR', 'my-old-run']);
  });

  t.test('raw events.jsonl of a pre-v0.8 run', async (t) => {
    const dir = await fresh('legacy2');
    await mkdir(join(dir, 'old'));
    await writeFile(join(dir, 'old', 'events.jsonl'), '{"type":"node.entered"}\n');
    await refuses(t, { HARNESS_DATA_DIR: dir }, ['HARNESS_DATA_DIR', 'old']);
  });

  t.test('a run directory without an authenticated run-config.json', async (t) => {
    const dir = await fresh('legacy3');
    const runDir = `run-${'a'.repeat(64)}`;
    await mkdir(join(dir, runDir));
    await refuses(t, { HARNESS_DATA_DIR: dir }, ['HARNESS_DATA_DIR', runDir]);
    await writeFile(join(dir, runDir, 'run-config.json'), '{"schema":"harness.run-config.v1","runId":"x"}');
    await refuses(t, { HARNESS_DATA_DIR: dir }, ['HARNESS_DATA_DIR', runDir]);
  });

  t.test('a commit log, disputed-records file or drift file that is not a regular file', async (t) => {
    for (const name of ['commit.log', 'commit-disputed.jsonl', 'quarantined-runs.jsonl']) {
      const dir = await fresh(`special-${name}`);
      await mkdir(join(dir, name));
      await refuses(t, { HARNESS_DATA_DIR: dir }, ['HARNESS_DATA_DIR', name, 'not a regular file']);
    }
  });

  t.test('a live lease held by another process', async (t) => {
    const dir = await fresh('leased');
    const lease = JSON.stringify({
      pid: process.ppid,
      host: hostname(),
      startedAt: new Date().toISOString(),
    });
    await writeFile(join(dir, 'bridge.lease'), lease);
    await refuses(t, { HARNESS_DATA_DIR: dir }, [
      'HARNESS_DATA_DIR',
      'already leased by another bridge process',
    ]);
    t.equal(await readFile(join(dir, 'bridge.lease'), 'utf8'), lease, 'the lease is not taken over');
  });

  t.test('a stale lease (dead holder) is taken over', async (t) => {
    const dir = await fresh('stale-lease');
    const child = spawn(process.execPath, ['-e', '0']);
    const [code] = await once(child, 'exit');
    t.equal(code, 0);
    await writeFile(
      join(dir, 'bridge.lease'),
      JSON.stringify({ pid: child.pid, host: hostname(), startedAt: new Date().toISOString() }),
    );
    await starts(t, { HARNESS_DATA_DIR: dir });
  });

  t.test(
    'a lease naming this process, left by a previous holder whose PID was reused, is taken over',
    async (t) => {
      // As after a container restart: the PID is alive (it is this process), the lease is not.
      const dir = await fresh('reused-pid');
      await writeFile(
        join(dir, 'bridge.lease'),
        JSON.stringify({ pid: process.pid, host: hostname(), startedAt: '2026-01-02T03:04:05.000Z' }),
      );
      await starts(t, { HARNESS_DATA_DIR: dir });
    },
  );

  t.test('a second bridge in this process on the same data directory', async (t) => {
    const dir = await fresh('same-process');
    const first = await startBridge({ env: { ...te.env, HARNESS_DATA_DIR: dir } });
    t.teardown(() => first.close());
    const lease = await readFile(join(dir, 'bridge.lease'), 'utf8');
    await refuses(t, { HARNESS_DATA_DIR: dir }, [
      'HARNESS_DATA_DIR',
      'already leased by another bridge process',
      'in this process',
    ]);
    t.equal(await readFile(join(dir, 'bridge.lease'), 'utf8'), lease, 'the lease is not taken over');
    await first.close();
    await starts(t, { HARNESS_DATA_DIR: dir });
  });

  t.test('a lease from another host: live while renewed, stale after LEASE_STALE_MS', async (t) => {
    const dir = await fresh('other-host');
    const path = join(dir, 'bridge.lease');
    const lease = JSON.stringify({ pid: 1, host: 'container-b', startedAt: new Date().toISOString() });
    await writeFile(path, lease);
    await refuses(t, { HARNESS_DATA_DIR: dir }, [
      'HARNESS_DATA_DIR',
      'already leased by another bridge process',
      'container-b',
    ]);
    t.equal(await readFile(path, 'utf8'), lease, 'the lease is not taken over');
    const old = new Date(Date.now() - LEASE_STALE_MS - 1000);
    await utimes(path, old, old);
    await starts(t, { HARNESS_DATA_DIR: dir });
  });

  t.test('a held lease is renewed, and only while it is still this bridge’s', async (t) => {
    const dir = await fresh('renewed');
    const path = join(dir, 'bridge.lease');
    const lease = await acquireLease(dir, { renewMs: 20 });
    const old = new Date(Date.now() - 3_600_000);
    await utimes(path, old, old);
    await setTimeout(300);
    t.ok(Date.now() - (await stat(path)).mtimeMs < 60_000, 'the holder touched its lease');
    // Taken over meanwhile (its holder looked stale elsewhere): left as the new holder wrote it.
    const other = JSON.stringify({ pid: 1, host: 'container-b', startedAt: new Date().toISOString() });
    await writeFile(path, other);
    await utimes(path, old, old);
    await setTimeout(300);
    t.ok(Date.now() - (await stat(path)).mtimeMs > 3_000_000, 'a lease no longer ours is not renewed');
    await lease.release();
    t.equal(await readFile(path, 'utf8'), other, 'nor removed on release');
  });

  t.test('a pre-existing recovery mutex, malformed or not, is never stolen', async (t) => {
    for (const content of ['garbage', JSON.stringify({ pid: 1, host: hostname(), startedAt: 'then' }), '']) {
      const dir = await fresh(`mutex-${content.length}`);
      await writeFile(join(dir, 'recovery.mutex'), content);
      await refuses(t, { HARNESS_DATA_DIR: dir }, ['HARNESS_DATA_DIR', 'recovery.mutex']);
      t.equal(
        await readFile(join(dir, 'recovery.mutex'), 'utf8'),
        content,
        'the mutex is left for the operator',
      );
    }
  });

  t.test('a data directory path that is a file', async (t) => {
    const file = join(te.dir, 'data-is-a-file');
    await writeFile(file, 'x');
    await refuses(t, { HARNESS_DATA_DIR: file }, ['HARNESS_DATA_DIR']);
  });

  t.test('no refusal left a lease or mutex behind', async (t) => {
    const dir = join(te.dir, 'legacy1');
    await t.rejects(access(join(dir, 'bridge.lease')));
    await t.rejects(access(join(dir, 'recovery.mutex')));
  });
});

/** The real CLI: exit code 2 and one line on stderr (CONTRACT 8). Needs `npm run build`. */
function bridgeChild(env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, [CLI, 'bridge'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
}

t.test('through the CLI: exit code 2 and one line naming the variable', async (t) => {
  const env = { ...te.env };
  delete env['HARNESS_BRIDGE_ACCESS_TOKEN'];
  const r = await exitOf(bridgeChild(env));
  t.equal(r.code, 2);
  const lines = r.stderr.trimEnd().split('\n');
  t.equal(lines.length, 1, r.stderr);
  t.ok(lines[0]!.includes('HARNESS_BRIDGE_ACCESS_TOKEN'), r.stderr);

  const short = await exitOf(bridgeChild({ ...te.env, HARNESS_HUMAN_APPROVAL_TOKEN: 'short' }));
  t.equal(short.code, 2);
  t.ok(short.stderr.includes('HARNESS_HUMAN_APPROVAL_TOKEN'));
  t.ok(short.stderr.includes('at least 32 bytes'), short.stderr);
  t.notOk(short.stderr.includes(te.env['HARNESS_BRIDGE_INTEGRITY_KEY']!), 'no credential echoed');

  for (const bad of [te.env['HARNESS_REVIEW_TRUST_SHA256']!.slice(1), 'g'.repeat(64)]) {
    const pin = await exitOf(bridgeChild({ ...te.env, HARNESS_REVIEW_TRUST_SHA256: bad }));
    t.equal(pin.code, 2, 'a malformed pin exits 2');
    t.ok(pin.stderr.includes('HARNESS_REVIEW_TRUST_SHA256'), pin.stderr);
  }
});

t.test('through the CLI: a second bridge on a leased data directory', async (t) => {
  const env = { ...te.env, HARNESS_DATA_DIR: join(te.dir, 'cli-lease'), HARNESS_BRIDGE_PORT: '0' };
  const first = bridgeChild(env);
  t.teardown(() => {
    if (first.exitCode === null) first.kill('SIGKILL');
  });
  const lines = createInterface({ input: first.stdout! });
  for await (const line of lines) if (line.startsWith('Server listening at http://')) break;
  const second = await exitOf(bridgeChild(env));
  t.equal(second.code, 2);
  t.equal(second.stderr.trimEnd().split('\n').length, 1, second.stderr);
  t.ok(second.stderr.includes('HARNESS_DATA_DIR'), `${second.stderr}`);
  t.ok(second.stderr.includes('already leased by another bridge process'), second.stderr);
  first.kill('SIGTERM');
  const [code] = await once(first, 'exit');
  t.equal(code, 0, 'the first bridge shuts down cleanly');
});
