import { rm } from 'node:fs/promises';
import t from 'tap';
import { runPaths } from '../../src/storage/paths.js';
import { QuarantineReasons } from '../../src/storage/quarantine.js';
import { cleanup, ev, makeTestEnv, startTestBridge } from '../helpers/bridge.js';

/**
 * CONTRACT 3: no absolute path appears in a response. Quarantine reasons are shown by every read
 * of the run, and a reason made from a file-system error (Node quotes the path it failed on) would
 * carry the data directory's absolute path.
 */
t.test('a run file gone at runtime quarantines the run without naming where it was', async (t) => {
  const te = await makeTestEnv();
  const first = await startTestBridge(te);
  t.equal((await first.req('POST', '/runs/gone/events', ev())).status, 201);
  await first.close();
  // A new bridge has not opened the run yet; its config disappears after startup.
  const b = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  await rm(runPaths(te.dataDir, 'gone').config);
  const read = await b.req('GET', '/runs/gone');
  t.equal(read.body['run'].status, 'quarantined');
  const reasons: string[] = read.body['run'].quarantine.reasons;
  t.match(reasons, [/^run-config\.json: ENOENT/]);
  for (const text of [JSON.stringify(read.body), JSON.stringify((await b.req('GET', '/runs')).body)]) {
    t.notOk(text.includes(te.dir), 'no absolute path in the answer');
  }
  t.match(reasons[0], /'run-config\.json'/, 'the file is still named');
});

t.test('quoted absolute paths in a reason keep only their last component', async (t) => {
  const q = new QuarantineReasons();
  q.add("events.jsonl: EACCES: permission denied, open '/home/op/.harness/runs/run-ab/events.jsonl'");
  q.add("run.json: rename '/tmp/x/run.json.tmp' -> '/tmp/x/run.json'");
  q.add("a relative 'proof/proof.json' stays");
  t.same(q.info.reasons, [
    "events.jsonl: EACCES: permission denied, open 'events.jsonl'",
    "run.json: rename 'run.json.tmp' -> 'run.json'",
    "a relative 'proof/proof.json' stays",
  ]);
});
