import { createHash, generateKeyPairSync } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { RunBundle } from '../../src/contract/bundle.js';
import { SourceError } from '../../src/sources/client.js';
import { writeArtifacts } from '../../src/sources/replay-artifacts.js';
import { bundleText, lastClaims, partDigest, signManifest } from '../../src/storage/bundle-seal.js';
import { cleanup, ev, makeTestEnv, startTestBridge, type TestBridge } from '../helpers/bridge.js';
import { bridgeClientEnv, expectRefused, runCli } from '../helpers/cli.js';
import { silentBridge } from '../helpers/silent-bridge.js';

/**
 * Issue 31: a replay carries its artifacts. A bundle exported --with-artifacts has its bytes
 * written into a fresh root that the replay run is created with, so the bridge verifies every
 * replayed claim; `--artifact-root DIR` (and `--adapter FILE`) give a root for any input; an input
 * whose claims would have no root is refused before anything is posted. The CLI is the built one.
 */

const sha = (text: string) => createHash('sha256').update(text).digest('hex');
type View = Record<string, any>;

t.test('replays carry their artifacts', async (t) => {
  const te = await makeTestEnv();
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  te.env['HARNESS_BRIDGE_EXPORT_KEY'] = privateKey
    .export({ type: 'pkcs8', format: 'der' })
    .toString('base64');
  const b: TestBridge = await startTestBridge(te);
  t.teardown(() => cleanup(b));
  const pub = join(te.dir, 'export-key.pub');
  await writeFile(pub, String(publicKey.export({ type: 'spki', format: 'pem' })));
  const env = { ...bridgeClientEnv(b), HARNESS_EXPORT_PUBLIC_KEY: pub };
  const file = (name: string) => join(te.dir, name);
  const events = async (runId: string): Promise<View[]> =>
    (await b.req('GET', `/runs/${runId}?eventCursor=0&eventLimit=200`)).body['run'].events;
  const claimsOf = async (runId: string) =>
    (await events(runId)).filter((e) => e['claim']).map((e) => [e['id'], e['claim'].path, e['claim'].sha256]);
  const absent = async (t: Test, runId: string) =>
    t.equal((await b.req('GET', `/runs/${runId}`)).status, 404, `no run ${runId}`);

  // The recorded run: run/intake.json claimed twice with other bytes, run/route.json once.
  const root = te.artifactRoot;
  await mkdir(join(root, 'run'), { recursive: true });
  const post = async (e: Record<string, unknown>) =>
    t.equal((await b.req('POST', '/runs/art-src/events', e)).status, 201, JSON.stringify(e));
  await post(ev({ id: 'a0', artifactRoot: root }));
  await writeFile(join(root, 'run', 'intake.json'), '{"intake":1}\n');
  await post(ev({ id: 'a1', type: 'artifact.written', artifact: 'run/intake.json' }));
  await writeFile(join(root, 'run', 'intake.json'), '{"intake":2}\n');
  await post(ev({ id: 'a2', type: 'artifact.written', artifact: 'run/intake.json' }));
  await writeFile(join(root, 'run', 'route.json'), '{"route":1}\n');
  await post(ev({ id: 'a3', type: 'artifact.written', nodeId: 'route', artifact: 'run/route.json' }));
  const exported = async (name: string, ...more: string[]) => {
    const r = await runCli(['export', 'art-src', '-o', file(name), ...more], env);
    t.equal(r.exitCode, 0, r.stderr);
    return readFile(file(name), 'utf8');
  };
  const full = await exported('full.json', '--with-artifacts');
  await exported('lean.json');

  t.test('a bundle with artifacts replays to the end, every claim verified', async (t) => {
    const r = await runCli(['replay', file('full.json')], env);
    t.equal(r.exitCode, 0, r.stderr);
    const home = join(te.dir, '.harness', 'replays', 'art-src-replay-1');
    t.same(JSON.parse(r.stdout), {
      runId: 'art-src-replay-1',
      events: 4,
      source: 'run-packet',
      artifactRoot: home,
    });
    // Only the last bytes of a path travel: each claim of run/intake.json records them.
    t.same(await claimsOf('art-src-replay-1'), [
      ['a1', 'run/intake.json', sha('{"intake":2}\n')],
      ['a2', 'run/intake.json', sha('{"intake":2}\n')],
      ['a3', 'run/route.json', sha('{"route":1}\n')],
    ]);
    const journal = (await b.journal('art-src-replay-1')).toString();
    t.equal(journal.split('\n').filter((l) => l.includes(sha('{"intake":2}\n'))).length, 2);
    t.equal(await readFile(join(home, 'run', 'route.json'), 'utf8'), '{"route":1}\n');
    t.equal((await stat(home)).mode & 0o777, 0o700, 'the root is its owner’s only');
    t.equal((await stat(join(home, 'run'))).mode & 0o777, 0o700);
    t.equal((await stat(join(home, 'run', 'intake.json'))).mode & 0o777, 0o600);
  });

  t.test('a taken run ID moves the written root along to the next one', async (t) => {
    // replay-1's run and directory exist; replay-2's run exists but has no directory yet.
    t.equal((await b.req('POST', '/runs', { id: 'art-src-replay-2' })).status, 201);
    const r = await runCli(['replay', file('full.json')], env);
    t.equal(r.exitCode, 0, r.stderr);
    const replays = join(te.dir, '.harness', 'replays');
    t.same(JSON.parse(r.stdout).artifactRoot, join(replays, 'art-src-replay-3'));
    t.same((await readdir(replays)).sort(), ['art-src-replay-1', 'art-src-replay-3']);
    t.equal((await claimsOf('art-src-replay-3')).length, 3, 'every claim verified in the moved root');
  });

  t.test(
    '--artifact-root: a new or empty directory takes the bytes, a non-empty one is refused',
    async (t) => {
      const fresh = join(te.dir, 'fresh', 'root');
      const r = await runCli(
        ['replay', file('full.json'), '--artifact-root', fresh, '--as', 'to-fresh'],
        env,
      );
      t.equal(r.exitCode, 0, r.stderr);
      t.equal(JSON.parse(r.stdout).artifactRoot, fresh);
      t.equal((await claimsOf('to-fresh')).length, 3);
      const empty = join(te.dir, 'empty');
      await mkdir(empty);
      const e = await runCli(
        ['replay', file('full.json'), '--artifact-root', empty, '--as', 'to-empty'],
        env,
      );
      t.equal(e.exitCode, 0, e.stderr);
      t.same(await readdir(empty), ['run']);

      const before = await readdir(join(root, 'run'));
      expectRefused(
        t,
        await runCli(['replay', file('full.json'), '--artifact-root', root, '--as', 'to-full'], env),
        'is not empty, nothing was posted',
      );
      await absent(t, 'to-full');
      t.same(await readdir(join(root, 'run')), before, 'the directory is left as it was');
    },
  );

  t.test('an --as that exists leaves no directory behind', async (t) => {
    const r = await runCli(['replay', file('full.json'), '--as', 'art-src'], env);
    t.equal(r.exitCode, 1, r.stderr);
    t.match(r.stderr, /run art-src exists already/);
    await t.rejects(stat(join(te.dir, '.harness', 'replays', 'art-src')), { code: 'ENOENT' });
  });

  t.test('claims with no root are refused before anything is posted', async (t) => {
    expectRefused(
      t,
      await runCli(['replay', file('lean.json'), '--as', 'lean-r'], env),
      'event 1 (artifact.written) claims an artifact and the replay has no artifact root, nothing was posted: give --artifact-root DIR, or replay a bundle exported --with-artifacts',
    );
    await absent(t, 'lean-r');
    const proposal = join(te.dir, 'proposal.jsonl');
    const proposed = ev({
      type: 'self_heal.pr_proposed',
      nodeId: 'self-heal',
      selfHealPrUrl: 'self_heal/pr.json',
    });
    await writeFile(proposal, `${JSON.stringify(ev({ id: 'p0' }))}\n${JSON.stringify(proposed)}\n`);
    expectRefused(
      t,
      await runCli(['replay', proposal, '--as', 'prop-r'], env),
      'line 2 (self_heal.pr_proposed)',
    );
    await absent(t, 'prop-r');
  });

  t.test('a lean bundle or a JSONL replays against --artifact-root', async (t) => {
    const lean = await runCli(['replay', file('lean.json'), '--artifact-root', root, '--as', 'lean-ok'], env);
    t.equal(lean.exitCode, 0, lean.stderr);
    t.same(
      (await claimsOf('lean-ok')).map((c) => c[2]),
      [sha('{"intake":2}\n'), sha('{"intake":2}\n'), sha('{"route":1}\n')],
    );
    const missing = join(te.dir, 'no-such-root');
    expectRefused(
      t,
      await runCli(['replay', file('lean.json'), '--artifact-root', missing], env),
      '--artifact-root',
    );
    await absent(t, 'art-src-replay-4');
    const jsonl = file('written.jsonl');
    const written = ev({ id: 'w1', type: 'artifact.written', nodeId: 'route', artifact: 'run/route.json' });
    await writeFile(jsonl, `${JSON.stringify(ev({ id: 'w0' }))}\n${JSON.stringify(written)}\n`);
    const r = await runCli(['replay', jsonl, '--artifact-root', root], env);
    t.equal(r.exitCode, 0, r.stderr);
    t.same(await claimsOf('written-replay-1'), [['w1', 'run/route.json', sha('{"route":1}\n')]]);
  });

  t.test('--adapter: the replay run takes the recorded run’s artifact paths', async (t) => {
    const adapter = join(te.repo, 'start-adapter.json');
    await writeFile(adapter, JSON.stringify({ runtime: { artifactByNode: { intake: 'run/start.json' } } }));
    await writeFile(join(root, 'run', 'start.json'), '{"start":1}\n');
    const jsonl = file('start.jsonl');
    const written = ev({ id: 's1', type: 'artifact.written', artifact: 'run/start.json' });
    await writeFile(jsonl, `${JSON.stringify(ev({ id: 's0' }))}\n${JSON.stringify(written)}\n`);
    const r = await runCli(['replay', jsonl, '--artifact-root', root, '--adapter', adapter], env);
    t.equal(r.exitCode, 0, r.stderr);
    t.same(await claimsOf('start-replay-1'), [['s1', 'run/start.json', sha('{"start":1}\n')]]);
    const plain = await runCli(['replay', jsonl, '--artifact-root', root, '--as', 'no-adapter'], env);
    t.equal(plain.exitCode, 1, 'without it the node writes the default path');
    t.match(plain.stderr, /node intake writes exactly run\/intake\.json/);
  });

  t.test('a first event naming its artifactRoot roots the claims after it', async (t) => {
    // A JSONL recorded by `harness emit --artifact-root`: line 1 seals the root, line 2 claims.
    const jsonl = file('own-root.jsonl');
    const written = ev({ id: 'o1', type: 'artifact.written', nodeId: 'route', artifact: 'run/route.json' });
    await writeFile(
      jsonl,
      `${JSON.stringify(ev({ id: 'o0', artifactRoot: root }))}\n${JSON.stringify(written)}\n`,
    );
    const r = await runCli(['replay', jsonl], env);
    t.equal(r.exitCode, 0, r.stderr);
    t.same(JSON.parse(r.stdout), {
      runId: 'own-root-replay-1',
      events: 2,
      source: 'local-jsonl',
      artifactRoot: root,
    });
    t.same(await claimsOf('own-root-replay-1'), [['o1', 'run/route.json', sha('{"route":1}\n')]]);
    const same = await runCli(['replay', jsonl, '--artifact-root', root, '--as', 'own-same'], env);
    t.equal(same.exitCode, 0, same.stderr);
    t.equal((await claimsOf('own-same')).length, 1, '--artifact-root naming the same directory');
    const link = join(te.dir, 'root-link');
    await symlink(root, link);
    const linked = file('own-link.jsonl');
    await writeFile(
      linked,
      `${JSON.stringify(ev({ id: 'l0', artifactRoot: link }))}\n${JSON.stringify(written)}\n`,
    );
    const through = await runCli(['replay', linked, '--artifact-root', root, '--as', 'own-link'], env);
    t.equal(through.exitCode, 0, through.stderr);
    t.equal((await claimsOf('own-link')).length, 1, 'a link to that directory, as the bridge resolves it');

    const other = join(te.dir, 'other-root');
    await mkdir(other);
    expectRefused(
      t,
      await runCli(['replay', jsonl, '--artifact-root', other, '--as', 'own-other'], env),
      `line 1 names artifactRoot ${root} and --artifact-root is ${other}, nothing was posted`,
    );
    await absent(t, 'own-other');
  });

  t.test('a default root someone else made is taken: never written into or removed', async (t) => {
    const replays = join(te.dir, '.harness', 'replays');
    await mkdir(join(replays, 'art-src-replay-4'));
    const r = await runCli(['replay', file('full.json')], env);
    t.equal(r.exitCode, 0, r.stderr);
    t.same(JSON.parse(r.stdout).runId, 'art-src-replay-5', 'the next ID, whose root this replay made');
    t.same(await readdir(join(replays, 'art-src-replay-4')), [], 'the other root is left as it was');
    await absent(t, 'art-src-replay-4');
    // Moved along from a taken run ID (replay-6's), the written root passes replay-7's empty one by.
    t.equal((await b.req('POST', '/runs', { id: 'art-src-replay-6' })).status, 201);
    await mkdir(join(replays, 'art-src-replay-7'));
    const moved = await runCli(['replay', file('full.json')], env);
    t.equal(moved.exitCode, 0, moved.stderr);
    t.same(JSON.parse(moved.stdout).artifactRoot, join(replays, 'art-src-replay-8'));
    t.same(await readdir(join(replays, 'art-src-replay-7')), [], 'the root moved past is left as it was');
    await absent(t, 'art-src-replay-7');
    // A replay that fails (its --as exists) leaves the empty root it did not make in place.
    await mkdir(join(replays, 'art-src'));
    const failed = await runCli(['replay', file('full.json'), '--as', 'art-src'], env);
    t.equal(failed.exitCode, 1, failed.stderr);
    t.match(failed.stderr, /replays\/art-src exists already: a replay is posted as a new run/);
    t.same(await readdir(join(replays, 'art-src')), [], 'still there, still empty');
  });

  t.test('a bridge that never answers the create: the written root is kept', async (t) => {
    const silent = await silentBridge(t, false);
    const r = await runCli(['replay', file('full.json'), '--as', 'no-answer'], {
      ...env,
      HARNESS_BRIDGE_URL: silent.origin,
      HARNESS_CLIENT_TIMEOUT_MS: '1000',
    });
    t.equal(r.exitCode, 1, r.stderr);
    const kept = join(te.dir, '.harness', 'replays', 'no-answer');
    t.equal(
      r.stderr.trimEnd(),
      `harness: the bridge at ${silent.origin} gave no answer within 1 s (HARNESS_CLIENT_TIMEOUT_MS); it may have created the replay run with the artifact root ${kept}, which is kept: remove it if that run does not exist`,
    );
    t.match(silent.received(), /^POST \/runs HTTP\/1\.1/, 'the create was sent');
    t.match(silent.received(), JSON.stringify({ artifactRoot: kept }).slice(1, -1));
    t.equal(await readFile(join(kept, 'run', 'route.json'), 'utf8'), '{"route":1}\n');
  });

  t.test('a signed bundle naming a path outside the root writes nothing', async (t) => {
    // What only the export key's holder could make; the paths are judged again all the same.
    const bundle = JSON.parse(full) as RunBundle;
    const last = bundle.events.find((e) => e.claim?.path === 'run/route.json')!;
    last.claim!.path = '../escape.json';
    bundle.contents = { ...bundle.contents, '../escape.json': bundle.contents!['run/route.json']! };
    delete bundle.contents['run/route.json'];
    bundle.artifacts = lastClaims(bundle.events);
    bundle.manifest.digests.events = partDigest(bundle.events);
    bundle.manifest.digests.artifacts = partDigest(bundle.artifacts);
    bundle.signature = signManifest(bundle.manifest, privateKey);
    await writeFile(file('escape.json'), bundleText(bundle));
    const outside = join(te.dir, 'out');
    expectRefused(
      t,
      await runCli(
        ['replay', file('escape.json'), '--artifact-root', join(outside, 'root'), '--as', 'esc'],
        env,
      ),
      'artifact "../escape.json" cannot be written: artifact path must not contain ..',
    );
    await absent(t, 'esc');
    await t.rejects(stat(outside), { code: 'ENOENT' }, 'nothing written, not even the root');
  });
});

t.test('writeArtifacts follows no link on the way to a file', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'harness-replay-root-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const elsewhere = join(dir, 'elsewhere');
  await mkdir(elsewhere);
  const linkedDir = join(dir, 'linked-dir');
  await mkdir(linkedDir);
  await symlink(elsewhere, join(linkedDir, 'run'));
  const bytes = { 'run/intake.json': Buffer.from('x').toString('base64') };
  await t.rejects(writeArtifacts(linkedDir, bytes, 'empty'), SourceError);
  t.same(await readdir(elsewhere), [], 'nothing written through the linked directory');

  const linkedFile = join(dir, 'linked-file');
  await mkdir(join(linkedFile, 'run'), { recursive: true });
  await writeFile(join(elsewhere, 'target'), 'kept');
  await symlink(join(elsewhere, 'target'), join(linkedFile, 'run', 'intake.json'));
  await t.rejects(writeArtifacts(linkedFile, bytes, 'empty'), SourceError);
  t.equal(await readFile(join(elsewhere, 'target'), 'utf8'), 'kept', 'the link’s target is unchanged');
});

t.test('writeArtifacts makes its root or leaves it: failing, it removes only what it made', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'harness-replay-own-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const bytes = { 'run/intake.json': Buffer.from('x').toString('base64') };
  const theirs = join(dir, 'theirs');
  await mkdir(theirs);
  t.equal(await writeArtifacts(theirs, bytes, 'new'), false, 'a root that exists is another’s');
  t.same(await readdir(theirs), []);
  // 'a' is written as a file, so 'a/b' cannot be: the root this call made goes, its parent stays.
  const broken = { a: bytes['run/intake.json'], 'a/b': bytes['run/intake.json'] };
  await t.rejects(writeArtifacts(join(dir, 'mine'), broken, 'new'), /a is not a plain directory/);
  t.same((await readdir(dir)).sort(), ['theirs']);
});
