import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { RunBundle } from '../../src/contract/bundle.js';
import { bundleText, partDigest, signManifest } from '../../src/storage/bundle-seal.js';
import { childEnvironment } from '../../src/validators/child-environment.js';
import { cleanup, ev, makeTestEnv, startTestBridge, type TestBridge } from '../helpers/bridge.js';
import { bridgeClientEnv, expectRefused, runCli } from '../helpers/cli.js';
import { startWithQuarantinedRun } from '../helpers/quarantine.js';

/**
 * Issue 31 items 2 and 3 (run-packet): `harness export` writes the bridge's signed bundle of a run,
 * `harness verify --bundle` checks it offline with the public key alone (one changed byte in any
 * part fails with that part's reason), and `harness replay` of a bundle verifies it first and posts
 * it as a new replay run of source run-packet. The CLI is the built one (`npm run build`).
 */

function exportKeyPair(): { text: string; pem: string; privateKey: KeyObject } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    text: privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64'),
    pem: String(publicKey.export({ type: 'spki', format: 'pem' })),
    privateKey,
  };
}

/** A copy of the bundle text with `change` applied to its parsed value, in canonical form again. */
function tampered(text: string, change: (b: RunBundle) => void): string {
  const bundle = JSON.parse(text) as RunBundle;
  change(bundle);
  return bundleText(bundle);
}

/** The one character of `s` at `i` replaced by another of the same alphabet (hex or base64). */
const flip = (s: string, i = 0) => `${s.slice(0, i)}${s[i] === 'a' ? 'b' : 'a'}${s.slice(i + 1)}`;

const differingBytes = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  let n = Math.abs(x.length - y.length);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) n++;
  return n;
};

t.test('run bundles: export, verify, replay', async (t) => {
  const te = await makeTestEnv();
  const key = exportKeyPair();
  te.env['HARNESS_BRIDGE_EXPORT_KEY'] = key.text;
  const b = await startWithQuarantinedRun(t, te, 'q-run', async () => {});
  t.teardown(() => cleanup(b));
  const pub = join(te.dir, 'export-key.pub');
  await writeFile(pub, key.pem);
  const env = { ...bridgeClientEnv(b), HARNESS_EXPORT_PUBLIC_KEY: pub };
  const file = (name: string) => join(te.dir, name);

  // A run with a claimed artifact, and one without any (what a replay can post in full).
  await mkdir(join(te.artifactRoot, 'run'), { recursive: true });
  await writeFile(join(te.artifactRoot, 'run', 'intake.json'), '{"intake":1}\n');
  const first = ev({ id: 'a1', artifactRoot: te.artifactRoot });
  t.equal((await b.req('POST', '/runs/art-1/events', first)).status, 201);
  const written = ev({
    id: 'a2',
    type: 'artifact.written',
    artifact: 'run/intake.json',
    message: 'wrote it',
  });
  t.equal((await b.req('POST', '/runs/art-1/events', written)).status, 201);
  for (const [i, nodeId] of ['intake', 'route'].entries())
    t.equal((await b.req('POST', '/runs/plain-1/events', ev({ id: `p${i}`, nodeId }))).status, 201);

  const exported = async (runId: string, name: string, ...more: string[]) => {
    const r = await runCli(['export', runId, '-o', file(name), ...more], env);
    t.equal(r.exitCode, 0, r.stderr);
    return readFile(file(name), 'utf8');
  };
  const verify = (name: string, ...more: string[]) =>
    runCli(['verify', '--bundle', file(name), ...more], env);

  t.test('export and verify round trip, with and without the artifacts', async (t) => {
    const before = await b.journal('art-1');
    const text = await exported('art-1', 'art.json', '--with-artifacts');
    t.same(await b.journal('art-1'), before, 'an export writes nothing to the run');
    t.equal((await stat(file('art.json'))).mode & 0o777, 0o600, 'the bundle is its owner’s only');
    const bundle = JSON.parse(text) as RunBundle;
    t.same(Object.keys(bundle.contents ?? {}), ['run/intake.json']);
    t.equal(Buffer.from(bundle.contents!['run/intake.json']!, 'base64').toString(), '{"intake":1}\n');
    t.same(
      bundle.artifacts.map((a) => [a.path, a.seq]),
      [['run/intake.json', 1]],
    );
    t.equal(bundle.manifest.status, 'running');
    t.equal(bundle.manifest.eventCount, 2);
    t.equal(bundle.config?.['runId'], 'art-1');
    const ok = await verify('art.json', '--key', pub);
    t.equal(ok.exitCode, 0, ok.stderr);
    t.match(
      ok.stdout,
      /^ok .*art\.json: run art-1 \(running, 2 events, 1 artifact with their bytes\), signed by export key [0-9a-f]{64}$/,
    );

    const lean = JSON.parse(await exported('art-1', 'lean.json')) as RunBundle;
    t.equal(lean.contents, undefined, 'no bytes without --with-artifacts');
    t.equal(lean.manifest.withArtifacts, false);
    t.equal((await verify('lean.json')).exitCode, 0, 'the key from HARNESS_EXPORT_PUBLIC_KEY');

    const stdout = await runCli(['export', 'plain-1'], env);
    t.equal(stdout.exitCode, 0, stdout.stderr);
    await writeFile(file('stdout.json'), stdout.stdout.endsWith('\n') ? stdout.stdout : `${stdout.stdout}\n`);
    t.equal((await verify('stdout.json')).exitCode, 0, 'standard output holds the same bundle');
  });

  t.test('one changed byte in each part fails with that part’s reason', async (t) => {
    const text = await readFile(file('art.json'), 'utf8');
    const cases: [string, string][] = [
      [
        'events',
        tampered(text, (x) => {
          x.events[1]!.event['message'] = 'wrote It';
        }),
      ],
      [
        'config',
        tampered(text, (x) => {
          x.config!['schema'] = 'harness.run-config.v2';
        }),
      ],
      [
        'digests',
        tampered(text, (x) => {
          x.artifacts[0]!.sha256 = flip(x.artifacts[0]!.sha256, 5);
        }),
      ],
      [
        'artifact bytes',
        tampered(text, (x) => {
          x.contents!['run/intake.json'] = flip(x.contents!['run/intake.json']!, 2);
        }),
      ],
      [
        'signature',
        tampered(text, (x) => {
          x.signature = flip(x.signature, 3);
        }),
      ],
      [
        'key id',
        tampered(text, (x) => {
          x.keyId = flip(x.keyId, 7);
        }),
      ],
      ['layout', `${text.slice(0, -1)} `],
    ];
    const reasons = new Set<string>();
    for (const [part, changed] of cases) {
      t.equal(differingBytes(text, changed), 1, `${part}: one byte differs`);
      await writeFile(file('bad.json'), changed);
      const r = await verify('bad.json');
      t.equal(r.exitCode, 1, `${part}: ${r.stdout}${r.stderr}`);
      t.match(r.stdout, /^INVALID [^\n]*bad\.json: [^\n]+$/, `${part}: one line`);
      reasons.add(r.stdout.replace(/^INVALID [^:]*: /, ''));
    }
    t.equal(reasons.size, cases.length, `a distinct reason each: ${[...reasons].join(' | ')}`);
    const reasonOf = async (changed: string) => {
      await writeFile(file('bad.json'), changed);
      return (await verify('bad.json')).stdout;
    };
    t.match(await reasonOf(cases[0]![1]), /its events are not the ones the signed manifest lists/);
    t.match(await reasonOf(cases[3]![1]), /artifact run\/intake\.json: its bytes do not hash/);
    t.match(await reasonOf(cases[5]![1]), /its key ID [0-9a-f]+ is not the given key's/);
    // The manifest is what the signature covers: a change to it is a signature that fails.
    const manifest = tampered(text, (x) => {
      x.manifest.runId = 'art-2';
    });
    t.equal(differingBytes(text, manifest), 1);
    t.match(await reasonOf(manifest), /its signature does not verify the manifest with the given key/);
    t.match(await reasonOf(cases[4]![1]), /its signature does not verify the manifest with the given key/);
  });

  t.test('a bundle signed with the right key but inconsistent parts is refused', async (t) => {
    const text = await readFile(file('art.json'), 'utf8');
    // What only the key holder could make: listed digests other than the events' claims, re-signed.
    const forged = tampered(text, (x) => {
      x.artifacts[0]!.sha256 = flip(x.artifacts[0]!.sha256, 0);
      x.manifest.digests.artifacts = partDigest(x.artifacts);
      x.signature = signManifest(x.manifest, key.privateKey);
    });
    await writeFile(file('forged.json'), forged);
    const r = await verify('forged.json');
    t.equal(r.exitCode, 1);
    t.match(r.stdout, /its artifact digests disagree with the events' last claims \(run\/intake\.json\)/);
  });

  t.test('verify --bundle: another key, no key, a missing file, run IDs beside it', async (t) => {
    const other = exportKeyPair();
    await writeFile(file('other.pub'), other.pem);
    const r = await verify('art.json', '--key', file('other.pub'));
    t.equal(r.exitCode, 1);
    t.match(r.stdout, /is not the given key's/);
    const { HARNESS_EXPORT_PUBLIC_KEY: _pub, ...noKey } = env;
    const none = await runCli(['verify', '--bundle', file('art.json')], noKey);
    expectRefused(t, none, 'give the public key with --key FILE');
    expectRefused(t, await verify('absent.json'), 'absent.json');
    expectRefused(t, await runCli(['verify', '--bundle', file('art.json'), 'art-1'], env), '--bundle');
    expectRefused(t, await runCli(['verify', '--key', pub], env), '--key is the key of a --bundle');
  });

  t.test('a bundle never holds a credential or a host path', async (t) => {
    const text = await readFile(file('art.json'), 'utf8');
    const values = {
      access: te.env['HARNESS_BRIDGE_ACCESS_TOKEN']!,
      human: te.env['HARNESS_HUMAN_APPROVAL_TOKEN']!,
      integrity: te.env['HARNESS_BRIDGE_INTEGRITY_KEY']!,
      exportKey: key.text,
      artifactRoot: te.artifactRoot,
      dataDir: te.dataDir,
    };
    for (const [name, value] of Object.entries(values)) t.notOk(text.includes(value), `no ${name}`);
    const bundle = JSON.parse(text) as RunBundle;
    t.notOk('humanTokenDigest' in bundle.config!, "not even the human token's digest");
    t.equal(bundle.config!['artifactRootSet'], true);
  });

  t.test('export refusals write nothing and change nothing', async (t) => {
    const missing = await runCli(['export', 'nope', '-o', file('nope.json')], env);
    t.equal(missing.exitCode, 1);
    t.match(missing.stderr, /run_not_found/);
    await t.rejects(stat(file('nope.json')), { code: 'ENOENT' }, 'no file');

    await writeFile(file('kept.json'), 'earlier\n');
    await writeFile(join(te.artifactRoot, 'run', 'intake.json'), '{"intake":2}\n');
    const before = await b.journal('art-1');
    const drifted = await runCli(['export', 'art-1', '-o', file('kept.json'), '--with-artifacts'], env);
    t.equal(drifted.exitCode, 1);
    t.match(
      drifted.stderr,
      /artifact_verification_failed: artifact run\/intake\.json changed since it was claimed \(event 1\)/,
    );
    t.equal(await readFile(file('kept.json'), 'utf8'), 'earlier\n', 'the file named is left as it was');
    t.same(await b.journal('art-1'), before, 'the run is unchanged');
    t.equal((await verify('art.json')).exitCode, 0, 'a bundle exported before still verifies');
    await writeFile(join(te.artifactRoot, 'run', 'intake.json'), '{"intake":1}\n');

    const bad = await runCli(['export', 'bad id'], env);
    expectRefused(t, bad, 'not canonical');
  });

  t.test('a quarantined run exports as its status and reasons only', async (t) => {
    const text = await exported('q-run', 'q.json');
    const bundle = JSON.parse(text) as RunBundle;
    t.equal(bundle.manifest.status, 'quarantined');
    t.ok(bundle.manifest.quarantine!.reasons.length > 0, 'the reasons');
    t.same([bundle.config, bundle.events, bundle.artifacts], [null, [], []]);
    t.equal((await verify('q.json')).exitCode, 0, 'it verifies');
    expectRefused(
      t,
      await runCli(['replay', file('q.json')], env),
      'holds no events (run q-run is quarantined)',
    );
    t.equal((await b.req('GET', '/runs/q-run-replay-1')).status, 404, 'nothing posted');
  });

  t.test('replay of a bundle: verified first, a new replay run of source run-packet', async (t) => {
    await exported('plain-1', 'plain.json');
    const r = await runCli(['replay', file('plain.json')], env);
    t.equal(r.exitCode, 0, r.stderr);
    t.same(JSON.parse(r.stdout), { runId: 'plain-1-replay-1', events: 2, source: 'run-packet' });
    const view = (await b.req('GET', '/runs/plain-1-replay-1')).body['run'];
    t.equal(view.runMode, 'replay');
    t.same(
      view.events.map((e: { id: string; runMode: string; eventSource: string }) => [
        e.id,
        e.runMode,
        e.eventSource,
      ]),
      [
        ['p0', 'replay', 'run-packet'],
        ['p1', 'replay', 'run-packet'],
      ],
    );
    const replayed = JSON.parse(await exported('plain-1-replay-1', 'replayed.json')) as RunBundle;
    t.equal((await verify('replayed.json')).exitCode, 0, 'a replayed run exports and verifies too');
    t.same(
      replayed.events.map((e) => e.event['eventSource']),
      ['run-packet', 'run-packet'],
    );

    const text = await readFile(file('plain.json'), 'utf8');
    await writeFile(
      file('plain-bad.json'),
      tampered(text, (x) => {
        x.events[0]!.event['message'] = 'n';
      }),
    );
    expectRefused(
      t,
      await runCli(['replay', file('plain-bad.json'), '--as', 'tampered-r'], env),
      'does not verify, nothing was posted: its events are not the ones the signed manifest lists',
    );
    t.equal((await b.req('GET', '/runs/tampered-r')).status, 404, 'no run created');

    await writeFile(file('other.pub'), exportKeyPair().pem);
    expectRefused(
      t,
      await runCli(['replay', file('plain.json'), '--key', file('other.pub'), '--as', 'other-r'], env),
      "is not the given key's",
    );
    t.equal((await b.req('GET', '/runs/other-r')).status, 404);
    const { HARNESS_EXPORT_PUBLIC_KEY: _pub, ...noKey } = env;
    expectRefused(t, await runCli(['replay', file('plain.json'), '--as', 'nokey-r'], noKey), '--key FILE');
    t.equal((await b.req('GET', '/runs/nokey-r')).status, 404);
  });
});

t.test('a bridge without an export key has no export route; the CLI names the fix', async (t: Test) => {
  const b: TestBridge = await startTestBridge();
  t.teardown(() => cleanup(b));
  t.equal((await b.req('POST', '/runs/r-1/events', ev())).status, 201);
  const before = await b.journal('r-1');
  const r = await b.req('GET', '/runs/r-1/export');
  t.equal(r.status, 404);
  t.equal(r.body['error'], 'not_found');
  const cli = await runCli(['export', 'r-1', '-o', join(b.t.dir, 'r.json')], bridgeClientEnv(b));
  t.equal(cli.exitCode, 1);
  t.match(cli.stderr, /holds no export key \(HARNESS_BRIDGE_EXPORT_KEY/);
  await t.rejects(stat(join(b.t.dir, 'r.json')), { code: 'ENOENT' }, 'no file');
  t.same(await b.journal('r-1'), before);
});

t.test('the export key is the bridge’s: withheld from children, refused by the clients', async (t) => {
  const value = exportKeyPair().text;
  const env = childEnvironment({ HARNESS_BRIDGE_EXPORT_KEY: value, OTHER: value, KEPT: 'k' });
  t.notOk('HARNESS_BRIDGE_EXPORT_KEY' in env, 'not under its name');
  t.equal(env['KEPT'], 'k');
  const clientEnv = { PATH: process.env['PATH'] ?? '', HARNESS_BRIDGE_ACCESS_TOKEN: 'a'.repeat(40) };
  for (const args of [
    ['export', 'r-1'],
    ['replay', 'x.jsonl'],
    ['emit', 'r-1', 'node.entered', 'intake', 'm'],
  ])
    expectRefused(
      t,
      await runCli(args, { ...clientEnv, HARNESS_BRIDGE_EXPORT_KEY: value }),
      'HARNESS_BRIDGE_EXPORT_KEY must not be in its environment',
    );
});
