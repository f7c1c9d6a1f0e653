import { spawn } from 'node:child_process';
import { mkdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout } from 'node:timers/promises';
import t from 'tap';
import { atomicWrite } from '../src/storage/atomic.js';
import { acquireLease } from '../src/storage/lease.js';
import { cleanup, ev, makeTestEnv, startTestBridge } from './helpers/bridge.js';
import { exitOf } from './helpers/cli.js';
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
const within = <T>(ms: number, p: Promise<T>) =>
  Promise.race([p, setTimeout(ms).then(() => Promise.reject(new Error(`nothing within ${ms} ms`)))]);

t.test('the lease tells its holder once when it is taken over, never after release', async (t) => {
  const te = await makeTestEnv();
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  const dir = join(te.dir, 'unit');
  await mkdir(dir);
  const lost: string[] = [];
  const release = await acquireLease(dir, { renewMs: 20, onLost: (h) => lost.push(h) });
  await setTimeout(100);
  t.same(lost, [], 'a lease still ours is not lost');
  const taken = await takeOver(dir);
  await setTimeout(200);
  t.same(lost, ['pid 1 on host "container-b"'], 'told once, naming the new holder');
  await release();
  t.equal(await readFile(join(dir, 'bridge.lease'), 'utf8'), taken, 'the new holder’s lease is left');

  const dir2 = join(te.dir, 'unit2');
  await mkdir(dir2);
  const gone: string[] = [];
  const release2 = await acquireLease(dir2, { renewMs: 20, onLost: (h) => gone.push(h) });
  await rm(join(dir2, 'bridge.lease'));
  await setTimeout(200);
  t.match(gone, [/^nobody/], 'a removed lease file is lost too');
  await release2();

  const quiet: string[] = [];
  const release3 = await acquireLease(dir2, { renewMs: 5, onLost: (h) => quiet.push(h) });
  await release3();
  await setTimeout(100);
  t.same(quiet, [], 'a released lease (its file removed by the release) is never reported lost');
});

t.test('a bridge whose lease is taken over stops serving and writes nothing more', async (t) => {
  const b = await startTestBridge(undefined, { leaseRenewMs: 50 });
  t.teardown(() => cleanup(b));
  t.equal((await b.req('POST', '/runs/r1/events', ev())).status, 201);
  const before = await b.journal('r1');
  await takeOver(b.t.dataDir);
  const message = await within(5000, b.leaseLost);
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
