import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { EXIT_IO_FAILED } from '../../src/cli/bridge.js';
import { LEASE_FILE } from '../../src/storage/paths.js';
import { cleanup, ev, makeTestEnv, startTestBridge } from '../helpers/bridge.js';
import { allEvents, within } from '../helpers/expect.js';
import { spawnBridge } from '../helpers/spawned-bridge.js';

/**
 * A listening socket that fails after the bridge started (Node's net server reports an accept that
 * failed as an 'error' event): the bridge stops as it does when its storage fails, rather than
 * die on the unhandled event with its lease held and its admitted requests unanswered.
 */
const acceptFailed = () => Object.assign(new Error('accept EMFILE'), { code: 'EMFILE', syscall: 'accept' });

t.test('a listener error stops the bridge: it answers what it admitted and releases its lease', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  t.equal((await b.req('POST', '/runs/l/events', ev({ id: 'l0' }))).status, 201);
  // An operation holding run `held` keeps the event posted behind it admitted but unanswered.
  let release = () => {};
  const holding = b.ctx.queue.run('held', () => new Promise<void>((r) => (release = r)));
  const inFlight = b.req('POST', '/runs/held/events', ev({ id: 'h1' }));
  while (b.ctx.queue.pending < 2) await new Promise((r) => setTimeout(r, 5));

  b.app.server.emit('error', acceptFailed());
  const refused = await b.req('POST', '/runs/l/events', ev({ id: 'l1' }));
  t.equal(refused.status, 503, 'nothing more is admitted');
  t.equal(refused.body['error'], 'bridge_busy');
  release();
  await holding;
  t.equal((await inFlight).status, 201, 'the admitted event is answered');
  const stop = await within(5000, b.stopped);
  t.same(stop, { cause: 'listener', message: 'the listener failed: accept EMFILE' });
  t.notOk(existsSync(join(b.t.dataDir, LEASE_FILE)), 'the lease is released');

  const again = await startTestBridge(b.t);
  t.teardown(() => again.close());
  t.same(
    (await allEvents(again, 'held')).map((e) => e['id']),
    ['h1'],
  );
  t.same(
    (await allEvents(again, 'l')).map((e) => e['id']),
    ['l0'],
    'the refused event was not stored',
  );
});

t.test('harness bridge exits with its one line when its listener fails', async (t) => {
  const te = await makeTestEnv();
  t.teardown(() => rm(te.dir, { recursive: true, force: true }));
  const faults = pathToFileURL(join(import.meta.dirname, '../helpers/bridge-faults.js')).href;
  const bridge = await spawnBridge(
    t,
    { ...te, env: { ...te.env, TEST_FAULT: 'listener' } },
    {
      node: ['--import', faults],
    },
  );
  t.equal((await bridge.req('POST', '/runs/c/events', ev())).status, 201);
  const exited = once(bridge.child, 'exit');
  bridge.child.kill('SIGUSR2');
  const [code] = await within(10_000, exited).catch(() => [null]);
  t.equal(code, EXIT_IO_FAILED, `exit code ${EXIT_IO_FAILED}`);
  t.match(
    bridge.stderr(),
    /^harness bridge: the listener failed: accept EMFILE; exiting so a supervisor restarts it\n$/,
    'one line names the cause',
  );
  t.notOk(existsSync(join(te.dataDir, LEASE_FILE)), 'the lease is released');
});
