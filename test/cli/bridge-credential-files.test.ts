import { spawn } from 'node:child_process';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { execa } from '#execa';
import { startBridge } from '../../src/server/start.js';
import { StartupError } from '../../src/storage/lease.js';
import { childEnvironment } from '../../src/validators/child-environment.js';
import { ev, makeTestEnv, startupFailure, type TestEnv } from '../helpers/bridge.js';
import { CLI, exitOf } from '../helpers/cli.js';
import { spawnBridge } from '../helpers/spawned-bridge.js';

/**
 * Issue 28 item 5: `/proc/<pid>/environ` keeps the environment a process was started with, so a
 * bridge given its credentials as variables shows them to every process of its user for its whole
 * life (deleting them from process.env later changes nothing there). Started from credential
 * files, `<NAME>_FILE` or systemd's `$CREDENTIALS_DIRECTORY/<NAME>`, with the variables absent, its
 * environment block holds none of the values, and it serves with them. Each credential is given
 * one way: a set-up that gives one twice is refused with one line, as is a `_FILE` its group or
 * others can read.
 */
const NAMES = ['HARNESS_BRIDGE_INTEGRITY_KEY', 'HARNESS_BRIDGE_ACCESS_TOKEN', 'HARNESS_HUMAN_APPROVAL_TOKEN'];

/** The test env with the three credentials taken out of it, and their values. */
function withoutCredentials(te: TestEnv): { env: Record<string, string>; values: string[] } {
  const env = { ...te.env };
  for (const name of NAMES) delete env[name];
  return { env, values: NAMES.map((name) => te.env[name]!) };
}

/** Writes each credential of `te` into `dir`, named `name(variable)`, with a final newline. */
async function writeCredentials(te: TestEnv, dir: string, name: (v: string) => string, mode = 0o600) {
  await mkdir(dir, { recursive: true });
  for (const v of NAMES) {
    await writeFile(join(dir, name(v)), `${te.env[v]}\n`);
    await chmod(join(dir, name(v)), mode);
  }
}

/** A bridge process started with `env`: it serves with the file's tokens and its environ holds no value. */
async function servesWithoutValuesInEnviron(
  t: Test,
  te: TestEnv,
  env: Record<string, string>,
  values: string[],
) {
  const b = await spawnBridge(t, { ...te, env });
  const access = { 'x-harness-bridge-token': values[1]! };
  const environ = await readFile(`/proc/${b.child.pid}/environ`);
  t.ok(environ.length > 0, 'the environment block was read');
  for (const [i, value] of values.entries()) {
    t.equal(environ.indexOf(value), -1, `${NAMES[i]}'s value is not in /proc/<pid>/environ`);
    t.notOk(
      environ
        .toString('utf8')
        .split('\0')
        .some((kv) => kv.startsWith(`${NAMES[i]}=`)),
      'nor its name',
    );
  }
  t.equal(
    (await b.req('POST', '/runs/r/events', ev(), access)).status,
    201,
    'the access token from the file is the one',
  );
  t.equal(
    (await b.req('GET', '/health', undefined, { 'x-harness-bridge-token': 'x'.repeat(40) })).status,
    401,
    'and another is refused',
  );
  const grant = ev({
    type: 'approval.requested',
    approvalOwner: 'o',
    approvalScope: 's',
    status: 'needs_approval',
  });
  t.equal((await b.req('POST', '/runs/r/events', grant, access)).status, 201);
  const decision = ev({ type: 'approval.granted', actor: 'human', approvalOwner: 'o', approvalScope: 's' });
  t.equal(
    (await b.req('POST', '/runs/r/events', decision, { ...access, 'x-harness-human-token': values[2]! }))
      .status,
    201,
    'the human token from the file decides an approval',
  );
}

t.test('harness bridge from <NAME>_FILE', async (t) => {
  const te = await makeTestEnv();
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  const dir = join(te.dir, 'credentials');
  await writeCredentials(te, dir, (v) => v.toLowerCase());
  const { env, values } = withoutCredentials(te);
  for (const v of NAMES) env[`${v}_FILE`] = join(dir, v.toLowerCase());
  await servesWithoutValuesInEnviron(t, te, env, values);
  // Control: given as variables, every value is there, to any process of the bridge's user.
  const given = await spawnBridge(t, {
    ...te,
    env: { ...te.env, HARNESS_DATA_DIR: join(te.dir, 'control') },
  });
  const environ = await readFile(`/proc/${given.child.pid}/environ`);
  for (const [i, value] of values.entries())
    t.not(environ.indexOf(value), -1, `control: ${NAMES[i]} given as a variable is in environ`);
});

t.test("harness bridge from systemd's CREDENTIALS_DIRECTORY", async (t) => {
  const te = await makeTestEnv();
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  const dir = join(te.dir, 'run-credentials');
  await writeCredentials(te, dir, (v) => v, 0o400);
  const { env, values } = withoutCredentials(te);
  env['CREDENTIALS_DIRECTORY'] = dir;
  await servesWithoutValuesInEnviron(t, te, env, values);
});

t.test('a credential given twice, or in a file others can read, is refused', async (t) => {
  const te = await makeTestEnv();
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  const files = join(te.dir, 'files');
  const systemd = join(te.dir, 'systemd');
  await writeCredentials(te, files, (v) => v);
  await writeCredentials(te, systemd, (v) => v, 0o400);
  const { env } = withoutCredentials(te);
  const fileEnv = Object.fromEntries(NAMES.map((v) => [`${v}_FILE`, join(files, v)]));
  const refused = async (what: string, e: Record<string, string>, says: string[]) => {
    const err = await startupFailure({ env: e });
    t.ok(err instanceof StartupError, `${what}: ${String(err)}`);
    const message = err instanceof Error ? err.message : '';
    for (const s of says) t.ok(message.includes(s), `${what}: says ${s}`);
    t.notOk(message.includes('\n'), 'one line');
    for (const v of NAMES) t.notOk(message.includes(te.env[v]!), 'no credential value in it');
  };
  const key = 'HARNESS_BRIDGE_ACCESS_TOKEN';
  await refused('variable and _FILE', { ...env, ...fileEnv, [key]: te.env[key]! }, [key, `${key}_FILE`]);
  await refused('variable and CREDENTIALS_DIRECTORY', { ...env, ...te.env, CREDENTIALS_DIRECTORY: systemd }, [
    'HARNESS_BRIDGE_INTEGRITY_KEY',
    'CREDENTIALS_DIRECTORY/HARNESS_BRIDGE_INTEGRITY_KEY',
  ]);
  await refused('_FILE and CREDENTIALS_DIRECTORY', { ...env, ...fileEnv, CREDENTIALS_DIRECTORY: systemd }, [
    'HARNESS_BRIDGE_INTEGRITY_KEY_FILE',
    'CREDENTIALS_DIRECTORY/',
  ]);
  await chmod(join(files, key), 0o640);
  await refused('a _FILE its group can read', { ...env, ...fileEnv }, [`${key}_FILE`, 'group or others']);
  await chmod(join(files, key), 0o600);
  await rm(join(files, key));
  await execa('mkfifo', [join(files, key)]);
  await refused('a FIFO in its place', { ...env, ...fileEnv }, [`${key}_FILE`, 'not a regular file']);
  await rm(join(files, key));
  await refused('a missing file', { ...env, ...fileEnv }, [`${key}_FILE`, 'cannot be read']);
  await writeFile(join(files, key), '\n', { mode: 0o600 });
  await refused('an empty file', { ...env, ...fileEnv }, [key, 'is missing']);

  // The command line says it in one line and exits 2.
  const child = spawn(process.execPath, [CLI, 'bridge'], {
    env: { ...te.env, HARNESS_BRIDGE_ACCESS_TOKEN_FILE: join(systemd, key) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const { code, stderr } = await exitOf(child);
  t.equal(code, 2);
  t.match(stderr, /^harness: bridge refuses to start: HARNESS_BRIDGE_ACCESS_TOKEN is given more than once/);
  t.equal(stderr.split('\n').length, 2, 'one line');
});

t.test('a credential read from a file is still withheld from every child by value', async (t) => {
  const te = await makeTestEnv();
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  const dir = join(te.dir, 'credentials');
  await writeCredentials(te, dir, (v) => v);
  const { env, values } = withoutCredentials(te);
  for (const v of NAMES) env[`${v}_FILE`] = join(dir, v);
  const b = await startBridge({ env });
  t.teardown(() => b.close());
  for (const v of NAMES) t.equal(process.env[v], undefined, `${v} is not in this process's environment`);
  const child = childEnvironment(Object.fromEntries(values.map((v, i) => [`SMUGGLED_${i}`, v])));
  for (const [i] of values.entries())
    t.notOk(`SMUGGLED_${i}` in child, `${NAMES[i]}'s value under another name`);
});
