import t from 'tap';
import { EVENT_MAX_BYTES, TEXT_FIELD_MAX } from '../../src/contract/index.js';
import { cutForJournal } from '../../src/server/run-completed.js';
import { cleanup, startTestBridge } from '../helpers/bridge.js';
import { complete, driveToReady } from '../helpers/complete-run.js';
import { records, writeArtifact } from '../helpers/expect.js';

/**
 * The records the bridge writes for a completion must fit the journal whatever the run's documents
 * name: the completion seal holds the claimed artifacts only (a packet or review may name every
 * file under the root), and a refused completion's run.blocked message is cut to what the stored
 * event may hold, however its problems quote agent-written paths.
 */
t.test(
  'a packet naming hundreds of files: the completion is stored, its seal holds the claims',
  async (t) => {
    const b = await startTestBridge();
    t.teardown(() => cleanup(b));
    await driveToReady(b, 'big');
    const artifacts = [];
    for (let i = 0; i < 600; i++) {
      const path = `evidence/file-${i}.txt`;
      await writeArtifact(b.t.artifactRoot, path, `evidence ${i}\n`);
      artifacts.push({ path, sha256: '0'.repeat(64) });
    }
    await writeArtifact(b.t.artifactRoot, 'run/packet.json', JSON.stringify({ artifacts }));
    const r = await complete(b, 'big');
    t.equal(r.status, 201, JSON.stringify(r.body).slice(0, 300));
    const last = records(await b.journal('big')).at(-1)!;
    t.equal(last['event'].type, 'run.completed');
    const sealed = Object.keys(last['seal'].artifacts).sort();
    const view = (await b.req('GET', '/runs/big')).body['run'];
    const claimed = view.artifacts.map((a: { path: string }) => a.path).sort();
    t.equal(sealed.length, 14, 'one claim per node');
    t.same(sealed, claimed, 'the seal holds exactly the claimed artifacts');
    t.notOk(
      sealed.some((p) => p.startsWith('evidence/')),
      'paths the packet names are checked, not sealed',
    );
  },
);

t.test('a refused completion quoting control characters still records its run.blocked', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'ctl');
  // A missing path of 4000 control characters: each is six bytes once escaped in JSON.
  const path = '\u0001'.repeat(4000);
  await writeArtifact(
    b.t.artifactRoot,
    'run/packet.json',
    JSON.stringify({ artifacts: [{ path, sha256: 'x' }] }),
  );
  const before = await b.journal('ctl');
  const r = await complete(b, 'ctl');
  t.equal(r.status, 409, JSON.stringify(r.body).slice(0, 300));
  t.equal(r.body['error'], 'finish_line_blocked');
  const after = await b.journal('ctl');
  t.ok(after.subarray(0, before.length).equals(before), 'earlier records untouched');
  const added = records(after.subarray(before.length));
  t.equal(added.length, 1, 'exactly one record appended');
  t.equal(added[0]!['event'].type, 'run.blocked');
  const message: string = added[0]!['event'].message;
  t.ok(message.endsWith('...'), 'the message was cut');
  t.ok(Buffer.byteLength(JSON.stringify(added[0]!['event'])) <= EVENT_MAX_BYTES, 'the stored event fits');
  t.equal((await b.req('GET', '/runs/ctl')).body['run'].status, 'blocked');
});

t.test('a refused completion quoting a lone surrogate still records its run.blocked', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'sur');
  // JSON may escape a lone surrogate; the parsed path is not well-formed Unicode, which canonical
  // JSON cannot sign: the gate's problems quote it, and the run.blocked record must still be stored.
  await writeArtifact(
    b.t.artifactRoot,
    'run/packet.json',
    JSON.stringify({ artifacts: [{ path: 'missing-\ud800.txt', sha256: 'x' }] }),
  );
  const before = await b.journal('sur');
  const r = await complete(b, 'sur');
  t.equal(r.status, 409, JSON.stringify(r.body).slice(0, 300));
  t.equal(r.body['error'], 'finish_line_blocked');
  const added = records((await b.journal('sur')).subarray(before.length));
  t.equal(added.length, 1, 'exactly one record appended');
  t.equal(added[0]!['event'].type, 'run.blocked');
  t.ok((added[0]!['event'].message as string).isWellFormed(), 'the stored message is well-formed');
  t.equal((await b.req('GET', '/runs/sur')).body['run'].status, 'blocked');
});

t.test('cutForJournal', async (t) => {
  t.equal(cutForJournal('short', 10, 100), 'short', 'what fits is kept whole');
  const long = 'x'.repeat(50);
  t.equal(cutForJournal(long, 20, 1000), `${'x'.repeat(17)}...`, 'cut by length');
  const controls = '\u0001'.repeat(100);
  const cut = cutForJournal(controls, 1000, 62);
  t.ok(Buffer.byteLength(JSON.stringify(cut)) <= 62, 'cut by escaped bytes');
  t.ok(Buffer.byteLength(JSON.stringify(`\u0001${cut}`)) > 62 || cut.length >= 100, 'as long as fits');
  const pairs = '😀'.repeat(30);
  const cutPairs = cutForJournal(pairs, 11, 1000);
  t.notOk(/[\uD800-\uDBFF]\.\.\.$/.test(cutPairs), 'never ends on half a surrogate pair');
  t.ok(cutPairs.length <= 11);
  // A bound that would cut between the halves of a pair (9 units before the "...") drops the pair.
  t.equal(cutForJournal(pairs, 12, 1000), `${'😀'.repeat(4)}...`, 'an odd cut drops the lone half');
  t.equal(cutForJournal('y'.repeat(TEXT_FIELD_MAX + 5), TEXT_FIELD_MAX, 1 << 20).length, TEXT_FIELD_MAX);
  t.equal(cutForJournal('a\ud800b', 10, 100), 'a\ufffdb', 'a lone surrogate becomes U+FFFD');
});
