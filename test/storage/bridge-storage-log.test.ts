import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import t from 'tap';
import { runPaths } from '../../src/storage/paths.js';
import { ev, makeTestEnv } from '../helpers/bridge.js';
import { spawnBridge } from '../helpers/spawned-bridge.js';

/**
 * `harness bridge` reports what storage and recovery did on stderr (docs/architecture.md): here a
 * run quarantined when it is opened, with its reason, while the bridge keeps serving. Needs
 * `npm run build`.
 */
t.test('harness bridge logs a quarantine on stderr, one line naming the run and the reason', async (t) => {
  const te = await makeTestEnv();
  const first = await spawnBridge(t, te);
  for (const id of ['e1', 'e2'])
    t.equal((await first.req('POST', '/runs/logged/events', ev({ id }))).status, 201);
  first.child.kill('SIGTERM');
  await once(first.child, 'exit');
  const journal = runPaths(te.dataDir, 'logged').journal;
  const buf = await readFile(journal);
  buf[buf.indexOf('"id":"e1"') + 7]! ^= 0x01;
  await writeFile(journal, buf);

  const second = await spawnBridge(t, te);
  const got = await second.req('GET', '/runs/logged');
  t.equal(got.body['run']?.status, 'quarantined', JSON.stringify(got.body).slice(0, 200));
  t.match(second.stderr(), /^harness bridge: run logged quarantined: .+$/m, 'the quarantine is logged');
  t.equal((await second.req('POST', '/runs/other/events', ev())).status, 201, 'other runs are served');
});
