import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { Settler } from '../../src/sources/watch-settle.js';
import { WatchTargets } from '../../src/sources/watch-targets.js';
import { cleanup, restartTestBridge, startTestBridge, type TestBridge } from '../helpers/bridge.js';
import { bridgeClientEnv, expectRefused, runCli } from '../helpers/cli.js';
import { pause, put, saveByRename, sha256, startWatcher } from '../helpers/watcher.js';

/**
 * Issue 31 items 1 and 6: `harness watch` against a real directory and a real bridge. Each settled
 * change of a named artifact is one `artifact.written` (live, watched-artifact) whose claim is the
 * file's bytes; other files, links and unsettled writes post nothing. The CLI is the built one.
 */

const SETTLE = 60;
/** Long enough for any change to have settled (two looks SETTLE apart) and been posted. */
const QUIET = SETTLE * 8;

async function newRun(b: TestBridge, id: string): Promise<string> {
  const root = join(b.t.dir, `root-${id}`);
  await mkdir(root, { recursive: true });
  const r = await b.req('POST', '/runs', { id, artifactRoot: root });
  if (r.status !== 201) throw new Error(JSON.stringify(r.body));
  return root;
}

/** The run's watched events: [nodeId, artifact, claimed sha256, runMode]. */
async function watched(b: TestBridge, id: string): Promise<string[][]> {
  const view = (await b.req('GET', `/runs/${id}?eventLimit=200`)).body['run'];
  return view.events
    .filter((e: { eventSource: string }) => e.eventSource === 'watched-artifact')
    .map((e: Record<string, any>) => [
      e['nodeId'],
      e['artifact'],
      e['claim']?.sha256,
      e['runMode'],
      e['type'],
    ]);
}

t.test('the watcher enters only the directories on the way to a named artifact', async (t) => {
  const nodes = [
    { id: 'intake', artifact: 'run/intake.json' },
    { id: 'prove', artifact: 'proof/deep/proof.json' },
    { id: 'route', artifact: null },
  ] as never;
  const targets = new WatchTargets('/r', nodes);
  const admitted = [
    '/r',
    '/r/run',
    '/r/run/intake.json',
    '/r/proof',
    '/r/proof/deep',
    '/r/proof/deep/proof.json',
  ];
  for (const p of admitted) t.notOk(targets.ignores(p), `${p} is watched`);
  for (const p of ['/r/run/other.json', '/r/other', '/r/proof/x', '/r/runx', '/elsewhere', '/r/../r/x'])
    t.ok(targets.ignores(p), `${p} is ignored`);
  t.same(
    targets.affected('proof'),
    ['proof/deep/proof.json'],
    'a directory event reaches the paths under it',
  );
  t.same(targets.affected(''), ['run/intake.json', 'proof/deep/proof.json']);
  t.same(targets.affected('run/other.json'), []);
});

t.test('a change settles only once two looks a settle interval apart agree', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'harness-settle-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'a.json');
  await writeFile(file, 'first');
  const settledAt: number[] = [];
  const settler = new Settler(
    100,
    () => file,
    () => settledAt.push(Date.now()),
  );
  t.teardown(() => settler.close());
  const start = Date.now();
  settler.report('a.json');
  // Written again with no report (a change the file watcher missed): the looks disagree.
  await pause(150);
  await writeFile(file, 'second, longer');
  const changedAt = Date.now();
  await pause(500);
  t.equal(settledAt.length, 1, 'settled once');
  t.ok(settledAt[0]! > changedAt, `settled after the unreported change (${settledAt[0]! - start} ms)`);
});

t.test('harness watch on one bridge', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const env = bridgeClientEnv(b);

  t.test('create, save by rename, a burst of writes: one event per settled change', async (t) => {
    const root = await newRun(b, 'w-create');
    const w = await startWatcher(t, env, 'w-create', root);
    t.ok(w.records[0]!['artifacts'].includes('run/intake.json'), 'the adapter names the artifacts');

    await put(root, 'run/intake.json', '{"v":1}');
    await w.posted(1);
    t.same(await watched(b, 'w-create'), [
      ['intake', 'run/intake.json', sha256('{"v":1}'), 'live', 'artifact.written'],
    ]);

    await saveByRename(root, 'run/intake.json', '{"v":2}');
    await w.posted(2);
    await pause(QUIET);
    t.same(
      (await watched(b, 'w-create')).map((e) => e[2]),
      [sha256('{"v":1}'), sha256('{"v":2}')],
      'a save by rename is one change (the temporary file is not named: nothing for it)',
    );

    for (let i = 0; i < 40; i += 1) await put(root, 'graph/graph.json', `{"i":${i}}`);
    await w.posted(3);
    await pause(QUIET);
    const after = await watched(b, 'w-create');
    t.equal(after.length, 3, '40 rapid writes are one event');
    t.same(after[2], [
      'code-intelligence',
      'graph/graph.json',
      sha256('{"i":39}'),
      'live',
      'artifact.written',
    ]);

    const before = await b.journal('w-create');
    await put(root, 'run/notes.json', '{}');
    await put(root, 'elsewhere/intake.json', '{}');
    await put(root, 'graph/graph.json', '{"i":39}');
    await pause(QUIET);
    t.same(await b.journal('w-create'), before, 'unnamed files and unchanged bytes post nothing');

    t.equal(await w.stop('SIGINT'), 0, 'SIGINT stops it cleanly');
    t.same(w.records.at(-1), { runId: 'w-create', posted: 3, refused: 0, undelivered: 0 });
  });

  t.test('a named path that is a link, or reached through one, is never posted', async (t) => {
    const root = await newRun(b, 'w-links');
    await put(root, 'real/intake.json', '{"linked":true}');
    await put(root, 'real/graph.json', '{"linked":true}');
    await symlink(join(root, 'real', 'intake.json'), join(root, 'run-target'));
    await mkdir(join(root, 'run'));
    await symlink(join(root, 'real', 'intake.json'), join(root, 'run', 'intake.json'));
    await symlink(join(root, 'real'), join(root, 'graph'));
    const before = await b.journal('w-links');
    const w = await startWatcher(t, env, 'w-links', root);
    await pause(QUIET);
    await put(root, 'real/intake.json', '{"linked":2}');
    await put(root, 'real/graph.json', '{"linked":2}');
    await pause(QUIET);
    t.same(await b.journal('w-links'), before, 'nothing was posted');
    const lines = w.stderr().trimEnd().split('\n');
    t.equal(lines.filter((l) => l.includes('run/intake.json')).length, 1, `reported once: ${w.stderr()}`);
    t.equal(lines.filter((l) => l.includes('graph/graph.json')).length, 1, `reported once: ${w.stderr()}`);

    // The link replaced by a regular file: the watcher is alive and posts it.
    await rm(join(root, 'run', 'intake.json'));
    await put(root, 'run/intake.json', '{"plain":true}');
    await w.posted(1);
    t.same(
      (await watched(b, 'w-links')).map((e) => e[1]),
      ['run/intake.json'],
    );
    t.equal(await w.stop(), 0);
  });

  t.test('a watcher started again posts only what changed while it was away', async (t) => {
    const root = await newRun(b, 'w-again');
    const first = await startWatcher(t, env, 'w-again', root);
    await put(root, 'run/intake.json', 'one');
    await put(root, 'graph/graph.json', 'one');
    await first.posted(2);
    t.equal(await first.stop(), 0);

    await put(root, 'graph/graph.json', 'two');
    await put(root, 'design/anchors.json', 'new');
    const second = await startWatcher(t, env, 'w-again', root);
    await second.posted(2);
    await pause(QUIET);
    t.same(
      (await second.posted(2)).map((r) => `${r['artifact']} ${r['duplicate']}`).sort(),
      ['design/anchors.json false', 'graph/graph.json false'],
      'nothing else is even offered to the bridge',
    );
    const events = await watched(b, 'w-again');
    t.equal(events.length, 4, 'the unchanged intake is not posted again');
    t.same(
      events
        .slice(2)
        .map((e) => `${e[1]} ${e[2]}`)
        .sort(),
      [`design/anchors.json ${sha256('new')}`, `graph/graph.json ${sha256('two')}`],
    );

    // A change seen but not settled when it is stopped is posted before it exits.
    await put(root, 'run/intake.json', 'last');
    await pause(SETTLE);
    t.equal(await second.stop(), 0);
    t.same((await watched(b, 'w-again')).at(-1)?.slice(1, 3), ['run/intake.json', sha256('last')]);
  });

  t.test('refusals: exit 2 or 1 with one line, nothing posted', async (t) => {
    const root = await newRun(b, 'w-refused');
    // A watcher that does not refuse runs until stopped: killed at 20 s, it fails here, not at tap's timeout.
    const refusal = (args: string[]) => runCli(args, env, undefined, 20_000);
    const before = await b.journal('w-refused');
    expectRefused(t, await refusal(['watch', '../x', '--root', root]), 'not canonical');
    expectRefused(t, await refusal(['watch', 'w-refused', '--root', join(root, 'nope')]), 'does not exist');
    expectRefused(
      t,
      await refusal(['watch', 'w-refused', '--root', b.t.dir]),
      'not the artifact root of run w-refused',
    );
    expectRefused(t, await refusal(['watch', 'w-refused', '--root', root, '--settle-ms', '5']), 'settle-ms');
    const missing = await refusal(['watch', 'w-nothing', '--root', root]);
    t.equal(missing.exitCode, 1, missing.stderr);
    t.match(missing.stderr, /run_not_found/);
    t.equal((await b.req('GET', '/runs/w-nothing')).status, 404, 'no run was created');
    const r = await b.req('POST', '/runs', { id: 'w-replay', runMode: 'replay', eventSource: 'local-jsonl' });
    t.equal(r.status, 201);
    expectRefused(t, await refusal(['watch', 'w-replay', '--root', root]), 'replay run');
    t.same(await b.journal('w-refused'), before, 'the run is byte-for-byte unchanged');
  });
});

t.test('a bridge restart: what changed while it was down is posted once it is back', async (t) => {
  let b = await startTestBridge();
  const te = b.t;
  t.teardown(async () => cleanup(b));
  const port = new URL(b.url).port;
  const env = bridgeClientEnv(b);
  const root = await newRun(b, 'w-restart');
  const w = await startWatcher(t, env, 'w-restart', root);
  await put(root, 'run/intake.json', 'before');
  await w.posted(1);

  await b.close();
  await put(root, 'run/intake.json', 'while down 1');
  await pause(QUIET);
  await writeFile(join(root, 'run/intake.json'), 'while down 2');
  await put(root, 'graph/graph.json', 'while down');
  await pause(QUIET);
  t.match(w.stderr(), /does not answer/);
  b = await restartTestBridge(te, port);
  await w.posted(3, 15_000);
  await pause(QUIET);
  t.match(w.stderr(), /answers again/);
  const events = (await watched(b, 'w-restart')).map((e) => `${e[1]} ${e[2]}`);
  t.equal(events[0], `run/intake.json ${sha256('before')}`);
  t.same(
    events.slice(1).sort(),
    [`graph/graph.json ${sha256('while down')}`, `run/intake.json ${sha256('while down 2')}`],
    'each path once, with its bytes as they are now',
  );
  t.equal(await w.stop(), 0);
});
