import { spawn } from 'node:child_process';
import { constants, existsSync } from 'node:fs';
import fsp, { appendFile, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout } from 'node:timers/promises';
import t, { type Test } from 'tap';
import { atomicWrite } from '../src/storage/atomic.js';
import { COMMIT_LOG_FILE } from '../src/storage/commit-log-replay.js';
import { acquireLease, LeaseLostError } from '../src/storage/lease.js';
import { runPaths } from '../src/storage/paths.js';
import { cleanup, ev, makeTestEnv, startTestBridge, type TestBridge } from './helpers/bridge.js';
import { exitOf } from './helpers/cli.js';
import { within } from './helpers/expect.js';
import { patchFs, pathOfFd } from './helpers/patch-fs.js';
import { CLI } from './helpers/paths.js';

/**
 * A bridge whose lease is taken over while it serves (a bridge on another host found it stale, as
 * after a suspended VM) or whose lease file is removed stops serving at its next renewal, instead
 * of appending to the same journals as the new holder.
 */
const other = () => JSON.stringify({ pid: 1, host: 'container-b', startedAt: new Date().toISOString() });
/** Takes the lease over as a bridge does: the new holder's file written with atomicWrite. */
async function takeOver(dataDir: string): Promise<string> {
  const text = other();
  await atomicWrite(join(dataDir, 'bridge.lease'), text);
  return text;
}

t.test('the lease tells its holder once when it is taken over, never after release', async (t) => {
  const te = await makeTestEnv();
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  const dir = join(te.dir, 'unit');
  await mkdir(dir);
  const lost: string[] = [];
  const lease = await acquireLease(dir, { renewMs: 20, onLost: (h) => lost.push(h) });
  await setTimeout(100);
  t.same(lost, [], 'a lease still ours is not lost');
  const taken = await takeOver(dir);
  await setTimeout(200);
  t.same(lost, ['pid 1 on host "container-b"'], 'told once, naming the new holder');
  await lease.release();
  t.equal(await readFile(join(dir, 'bridge.lease'), 'utf8'), taken, 'the new holder’s lease is left');

  const dir2 = join(te.dir, 'unit2');
  await mkdir(dir2);
  const gone: string[] = [];
  const lease2 = await acquireLease(dir2, { renewMs: 20, onLost: (h) => gone.push(h) });
  await rm(join(dir2, 'bridge.lease'));
  await setTimeout(200);
  t.match(gone, [/^nobody/], 'a removed lease file is lost too');
  await lease2.release();

  const quiet: string[] = [];
  const lease3 = await acquireLease(dir2, { renewMs: 5, onLost: (h) => quiet.push(h) });
  await lease3.release();
  await setTimeout(100);
  t.same(quiet, [], 'a released lease (its file removed by the release) is never reported lost');
});

t.test('a bridge whose lease is taken over stops serving and writes nothing more', async (t) => {
  const b = await startTestBridge(undefined, { leaseRenewMs: 50 });
  t.teardown(() => cleanup(b));
  t.equal((await b.req('POST', '/runs/r1/events', ev())).status, 201);
  const before = await b.journal('r1');
  await takeOver(b.t.dataDir);
  const { cause, message } = await within(5000, b.stopped);
  t.equal(cause, 'lease');
  t.match(
    message,
    /HARNESS_DATA_DIR .* is now held by pid 1 on host "container-b", so this bridge stopped serving/,
  );
  await t.rejects(fetch(`${b.url}/health`), 'the port no longer answers');
  t.ok(before.equals(await b.journal('r1')), 'journal unchanged');
  t.match(
    await readFile(join(b.t.dataDir, 'bridge.lease'), 'utf8'),
    /container-b/,
    'the lease stays the new holder’s',
  );
});

t.test(
  'the fence throws once the lease file is replaced or removed, and reports the loss at once',
  async (t) => {
    const te = await makeTestEnv();
    t.teardown(() => rm(te.dir, { recursive: true, force: true }));
    for (const [name, lose, holder] of [
      ['taken', (dir: string) => takeOver(dir), /^pid 1 on host "container-b"$/],
      ['removed', (dir: string) => rm(join(dir, 'bridge.lease')), /^nobody/],
    ] as const) {
      const dir = join(te.dir, name);
      await mkdir(dir);
      const lost: string[] = [];
      // Renewal is an hour away: only the fence can notice.
      const lease = await acquireLease(dir, { renewMs: 3_600_000, onLost: (h) => lost.push(h) });
      t.doesNotThrow(() => lease.fence(), `${name}: a lease still ours passes`);
      await lose(dir);
      t.throws(() => lease.fence(), LeaseLostError, `${name}: the fence throws`);
      t.throws(() => lease.fence(), LeaseLostError, `${name}: and keeps throwing`);
      await setTimeout(200);
      t.equal(lost.length, 1, `${name}: the loss is reported once, without waiting for a renewal`);
      t.match(lost[0], holder);
      await lease.release();
    }
  },
);

t.test('a lease file that can no longer be examined counts as lost', async (t) => {
  const te = await makeTestEnv();
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  const lost: string[] = [];
  const lease = await acquireLease(te.dir, { renewMs: 3_600_000, onLost: (h) => lost.push(h) });
  t.doesNotThrow(() => lease.fence());
  // As on a network file system whose file another host replaced: the descriptor is stale.
  patchFs(t, {
    fstatSync:
      (original) =>
      (fd: unknown, ...rest: unknown[]) => {
        if (pathOfFd(fd as number).endsWith('bridge.lease'))
          throw Object.assign(new Error('ESTALE: stale file handle'), { code: 'ESTALE' });
        return original(fd, ...rest);
      },
  });
  t.throws(() => lease.fence(), LeaseLostError);
  await setTimeout(200);
  t.equal(lost.length, 1, 'the loss is reported');
  await lease.release();
});

t.test('a takeover between writing the lease and opening it refuses the start', async (t) => {
  const te = await makeTestEnv();
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  const lease = join(te.dir, 'bridge.lease');
  const original = fsp.open;
  let raced = false;
  fsp.open = (async (path: unknown, flags?: unknown, mode?: unknown) => {
    // The first read-only open of the lease file once it exists, right after it was written
    // (the check for a live holder before reads it while it is still missing): another bridge
    // takes the lease over first.
    if (
      path === lease &&
      typeof flags === 'number' &&
      (flags & (constants.O_WRONLY | constants.O_RDWR)) === 0 &&
      !raced &&
      existsSync(lease)
    ) {
      raced = true;
      await takeOver(te.dir);
    }
    return original(path as string, flags as number, mode as number);
  }) as typeof fsp.open;
  syncBuiltinESMExports();
  t.teardown(() => {
    fsp.open = original;
    syncBuiltinESMExports();
  });
  await t.rejects(acquireLease(te.dir), {
    name: 'StartupError',
    message: /another bridge took the lease over/,
  });
  t.ok(raced, 'the takeover happened in between');
  t.match(await readFile(lease, 'utf8'), /container-b/, 'the new holder keeps it');
});

t.test('a loss a renewal finds closes the fence too', async (t) => {
  const te = await makeTestEnv();
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  const lost: string[] = [];
  const lease = await acquireLease(te.dir, { renewMs: 20, onLost: (h) => lost.push(h) });
  // Rewritten in place rather than replaced: the file this bridge holds open still has its link.
  await writeFile(join(te.dir, 'bridge.lease'), other());
  await setTimeout(200);
  t.equal(lost.length, 1, 'the renewal reports the loss');
  t.throws(() => lease.fence(), LeaseLostError, 'and the fence no longer passes');
  await lease.release();
});

/**
 * A bridge (renewal an hour away, so only the fence can notice) with run r1's first event and run
 * r3 created, then taken over; the new holder has since made a record durable in the shared
 * commit.log, where it stays until its own checkpoint. `log` is the log's bytes at that point.
 */
async function takenOver(t: Test): Promise<{ b: TestBridge; logPath: string; log: Buffer; journal: Buffer }> {
  const b = await startTestBridge(undefined, { leaseRenewMs: 3_600_000 });
  t.teardown(() => cleanup(b));
  t.equal((await b.req('POST', '/runs/r1/events', ev())).status, 201);
  t.equal((await b.req('POST', '/runs', { id: 'r3', title: 'T' })).status, 201);
  const journal = await b.journal('r1');
  await takeOver(b.t.dataDir);
  const logPath = join(b.t.dataDir, COMMIT_LOG_FILE);
  await appendFile(logPath, 'r1 {"the new holder\'s record":true}\n');
  return { b, logPath, log: await readFile(logPath), journal };
}

t.test('a bridge taken over writes nothing more from its next write on, long before a renewal', async (t) => {
  const { b, logPath, log, journal } = await takenOver(t);
  const refused = await b.req('POST', '/runs/r1/events', ev());
  t.equal(refused.status, 500, 'the event is not acknowledged');
  t.equal(refused.body.error, 'internal_error');
  const { message } = await within(5000, b.stopped);
  t.match(message, /is now held by pid 1 on host "container-b"/);
  t.ok(journal.equals(await b.journal('r1')), 'journal unchanged');
  t.ok(log.equals(await readFile(logPath)), 'the log is left as the new holder has it, not emptied');
});

for (const [what, refused] of [
  [
    'a run',
    async (t: Test, b: TestBridge) => {
      const entries = await readdir(b.t.dataDir);
      t.equal((await b.req('POST', '/runs', { id: 'r2', title: 'T' })).status, 500, 'no run is created');
      t.same(await readdir(b.t.dataDir), entries, 'nor any run directory');
    },
  ],
  [
    'a config',
    async (t: Test, b: TestBridge) => {
      const config = await readFile(runPaths(b.t.dataDir, 'r3').config);
      const journal = await b.journal('r3');
      const first = ev({ artifactRoot: b.t.artifactRoot });
      t.equal((await b.req('POST', '/runs/r3/events', first)).status, 500, 'the root is not sealed');
      t.ok(config.equals(await readFile(runPaths(b.t.dataDir, 'r3').config)), 'run-config.json unchanged');
      t.ok(journal.equals(await b.journal('r3')), 'nor is anything appended');
    },
  ],
] as const) {
  t.test(`a bridge taken over writes no ${what.slice(2)}, snapshot or checkpoint`, async (t) => {
    const { b, logPath, log } = await takenOver(t);
    await refused(t, b);
    await within(5000, b.stopped);
    await b.close();
    t.ok(log.equals(await readFile(logPath)), 'the log is not emptied by a checkpoint');
    await t.rejects(stat(runPaths(b.t.dataDir, 'r1').snapshot), { code: 'ENOENT' }, 'no run.json is written');
  });
}

t.test(
  'a bridge taken over and closed before it writes again leaves no snapshot or checkpoint',
  async (t) => {
    const { b, logPath, log, journal } = await takenOver(t);
    // Closing would snapshot the run (it has an event since its last snapshot) and empty the log.
    await b.close();
    await t.rejects(stat(runPaths(b.t.dataDir, 'r1').snapshot), { code: 'ENOENT' }, 'no run.json is written');
    t.ok(log.equals(await readFile(logPath)), 'the log is not emptied');
    t.ok(journal.equals(await b.journal('r1')), 'journal unchanged');
  },
);

t.test('through the CLI: exit code 1 and one line when the lease is taken over', async (t) => {
  const te = await makeTestEnv();
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  const child = spawn(process.execPath, [CLI, 'bridge'], { env: te.env, stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const exited = exitOf(child);
  for await (const line of createInterface({ input: child.stdout! }))
    if (line.startsWith('Server listening at http://')) break;
  await takeOver(te.dataDir);
  // The CLI renews every 10 s (LEASE_RENEW_MS): the takeover is seen within one period.
  const r = await within(25_000, exited);
  t.equal(r.code, 1);
  t.equal(r.stderr.trimEnd().split('\n').length, 1, r.stderr);
  t.match(
    r.stderr,
    /^harness bridge: the lease on HARNESS_DATA_DIR .* is now held by pid 1 on host "container-b"/,
  );
});
