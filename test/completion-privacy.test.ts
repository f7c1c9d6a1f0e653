import { createHash } from 'node:crypto';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { artifactRefPaths } from '../src/validators/json-scan.js';
import { cleanup, ev, startTestBridge } from './helpers/bridge.js';
import { complete, driveToReady, expectBlocked } from './helpers/complete-run.js';
import { expectRejected, writeArtifact } from './helpers/expect.js';

/**
 * CONTRACT 6 privacy check at the finish line: run.completed refuses a run whose claimed
 * artifacts or referenced documents carry a bridge credential value (409 finish_line_blocked and
 * a run.blocked record), as a completed-run read would quarantine it; the value is never echoed.
 */
const credentials = [
  'HARNESS_BRIDGE_ACCESS_TOKEN',
  'HARNESS_HUMAN_APPROVAL_TOKEN',
  'HARNESS_BRIDGE_INTEGRITY_KEY',
];

for (const name of credentials) {
  t.test(`${name} in a claimed artifact (handoff/final.md) refuses run.completed`, async (t) => {
    const b = await startTestBridge();
    t.teardown(() => cleanup(b));
    const value = b.t.env[name]!;
    await driveToReady(b, 'p1', { 'handoff/final.md': `handoff notes\nsession: ${value}\n` });
    const { r, blocked } = await expectBlocked(t, b, 'p1', 1);
    t.same(r.body.problems, ['artifact handoff/final.md contains a bridge credential value']);
    t.notMatch(JSON.stringify(r.body), value, 'the credential is never echoed');
    t.notMatch(JSON.stringify(blocked), value, 'nor recorded');
  });
}

t.test(
  'an access token in an unclaimed referenced document (run/packet.json) refuses run.completed',
  async (t) => {
    const b = await startTestBridge();
    t.teardown(() => cleanup(b));
    await driveToReady(b, 'p2');
    await writeArtifact(
      b.t.artifactRoot,
      'run/packet.json',
      JSON.stringify({ note: b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN'] }),
    );
    const { r } = await expectBlocked(t, b, 'p2', 1);
    t.same(r.body.problems, ['artifact run/packet.json contains a bridge credential value']);
  },
);

/** Every character as a JSON `\u` escape: the same string to anything that parses the document. */
const escaped = (value: string) =>
  [...value].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');

t.test('a credential spelled with JSON escapes in a JSON artifact refuses run.completed', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const token = b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!;
  // In a claimed document (escaped in a value), and in a member name of a JSON Lines artifact.
  const cases: [string, string, string][] = [
    ['p-esc1', 'run/intake.json', `{"summary":"tok=${escaped(token)}"}`],
    ['p-esc2', 'session/events.jsonl', `{"a":1}\n{"${escaped(token.slice(0, 8))}${token.slice(8)}":2}\n`],
  ];
  for (const [runId, path, text] of cases) {
    t.equal(
      JSON.stringify(JSON.parse(text.split('\n').at(-2) ?? text)).includes(token),
      true,
      'it decodes to the token',
    );
    t.notOk(text.includes(token), 'the bytes do not hold it');
    await driveToReady(b, runId, { [path]: text });
    const { r } = await expectBlocked(t, b, runId, 1);
    t.same(r.body.problems, [`artifact ${path} contains a bridge credential value`]);
  }
});

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** A v2-shaped packet naming `paths` as artifact references, as the run's packet. */
const packetNaming = (root: string, runId: string, paths: Record<string, string>) =>
  writeArtifact(
    root,
    'run/packet.json',
    JSON.stringify({
      schema: 'harness.run-packet.v2',
      runId,
      artifacts: Object.entries(paths).map(([path, bytes]) => ({ path, sha256: sha256(bytes) })),
    }),
  );

t.test('an access token in a file the packet names refuses run.completed', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'p3');
  const leaked = `extra notes ${b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']}\n`;
  await writeArtifact(b.t.artifactRoot, 'notes/extra.txt', leaked);
  await packetNaming(b.t.artifactRoot, 'p3', { 'notes/extra.txt': leaked });
  const { r } = await expectBlocked(t, b, 'p3', 1);
  t.same(r.body.problems, ['artifact notes/extra.txt contains a bridge credential value']);
});

t.test('a human token in a file the review names as evidence refuses run.completed', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'p4');
  const leaked = `log ${b.t.env['HARNESS_HUMAN_APPROVAL_TOKEN']}`;
  await writeArtifact(b.t.artifactRoot, 'evidence/scout.log', leaked);
  const evidence = [{ path: 'evidence/scout.log', sha256: sha256(leaked) }];
  await writeArtifact(
    b.t.artifactRoot,
    'review/review.json',
    JSON.stringify({ roster: { scout: { evidence } } }),
  );
  const { r } = await expectBlocked(t, b, 'p4', 1);
  t.same(r.body.problems, ['artifact evidence/scout.log contains a bridge credential value']);
});

t.test('a named path that is missing or reached through a link refuses run.completed', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'p5');
  const outside = join(b.t.dir, 'outside.txt');
  await writeFile(outside, `secret ${b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']}`);
  await writeArtifact(b.t.artifactRoot, 'notes/keep.txt', 'x');
  await symlink(outside, join(b.t.artifactRoot, 'notes/link.txt'));
  await packetNaming(b.t.artifactRoot, 'p5', {
    'notes/gone.txt': '',
    'notes/link.txt': '',
    '../outside.txt': '',
  });
  const { r } = await expectBlocked(t, b, 'p5', 3);
  t.match(r.body.problems, [
    /^artifact \.\.\/outside\.txt named in run\/packet\.json: /,
    'artifact notes/gone.txt named in run/packet.json: notes/gone.txt does not exist',
    /^artifact notes\/link\.txt named in run\/packet\.json: /,
  ]);
  t.notMatch(JSON.stringify(r.body), b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!, 'the link was not followed');
});

t.test('a referenced document reached through a link refuses run.completed', async (t) => {
  // The validators pass: only the artifact check can refuse the document.
  const b = await startTestBridge(undefined, { finishLine: async () => [] });
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'p8');
  const outside = join(b.t.dir, 'outside-packet.json');
  await writeFile(outside, JSON.stringify({ note: b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN'] }));
  await mkdir(join(b.t.artifactRoot, 'run'), { recursive: true });
  await symlink(outside, join(b.t.artifactRoot, 'run/packet.json'));
  const { r } = await expectBlocked(t, b, 'p8', 1);
  t.match(r.body.problems, [/^artifact run\/packet\.json: /]);
  t.notMatch(JSON.stringify(r.body), b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!, 'the link was not followed');
});

t.test('a missing path two documents name is one problem, naming the first document', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'p7');
  await packetNaming(b.t.artifactRoot, 'p7', { 'notes/gone.txt': '' });
  const evidence = [{ path: 'notes/gone.txt', sha256: sha256('') }];
  await writeArtifact(b.t.artifactRoot, 'rca/rca.json', JSON.stringify({ evidence }));
  const { r } = await expectBlocked(t, b, 'p7', 1);
  t.same(r.body.problems, [
    'artifact notes/gone.txt named in run/packet.json: notes/gone.txt does not exist',
  ]);
});

t.test(
  'an access token planted after completion in a file the packet names quarantines the run',
  async (t) => {
    const b = await startTestBridge();
    t.teardown(() => cleanup(b));
    await driveToReady(b, 'p6');
    await writeArtifact(b.t.artifactRoot, 'notes/extra.txt', 'clean notes\n');
    await packetNaming(b.t.artifactRoot, 'p6', { 'notes/extra.txt': 'clean notes\n' });
    t.equal((await complete(b, 'p6')).status, 201);
    t.equal((await b.req('GET', '/runs/p6')).body.run.status, 'completed');
    await writeFile(
      join(b.t.artifactRoot, 'notes/extra.txt'),
      `notes ${b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']}`,
    );
    const got = await b.req('GET', '/runs/p6');
    t.equal(got.body.run.status, 'quarantined');
    t.same(got.body.run.quarantine.reasons, [
      'artifact notes/extra.txt contains a bridge credential value',
      // The completion sealed what the packet's files held (test/completed-run-drift.test.ts).
      'a file the finish-line documents name changed after completion',
    ]);
    await expectRejected(
      t,
      b,
      'p6',
      () => b.req('POST', '/runs/p6/events', ev({ nodeId: 'handoff' })),
      409,
      'run_quarantined',
    );
  },
);

t.test('artifactRefPaths finds every {path, sha256} at any depth and in long arrays', async (t) => {
  let deep: unknown = { path: 'deep/ref.txt', sha256: 'x' };
  for (let i = 0; i < 10_000; i++) deep = { nested: [deep] };
  const inventory = Array.from({ length: 300_000 }, (_, i) => ({ path: `f/${i}`, sha256: 'y', size: 1 }));
  const found = artifactRefPaths({ deep, inventory, location: { path: 'app.js', symbol: 'add' } });
  t.equal(found.length, 300_001);
  t.ok(found.includes('deep/ref.txt'), 'a reference nested 10000 levels down');
  t.notOk(found.includes('app.js'), 'a path without a digest is not an artifact reference');
});

t.test('an access token in the patch a local self-heal proposal names refuses run.completed', async (t) => {
  // self_heal/pr.json is a document the self-heal-proposal rule reads the references of: the
  // files it names are scanned like those the packet, review and rca name.
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'p9');
  const detected = ev({ type: 'self_heal.detected', nodeId: 'self-heal' });
  t.equal((await b.req('POST', '/runs/p9/events', detected)).status, 201);
  const leaked = `diff --git a/x b/x\n+token = "${b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']}"\n`;
  await writeArtifact(b.t.artifactRoot, 'self_heal/fix.patch', leaked);
  await writeArtifact(
    b.t.artifactRoot,
    'self_heal/pr.json',
    JSON.stringify({
      schema: 'harness.self-heal-proposal.v1',
      runId: 'p9',
      patch: { path: 'self_heal/fix.patch', sha256: sha256(leaked) },
    }),
  );
  const proposed = ev({ type: 'self_heal.pr_proposed', nodeId: 'self-heal', artifact: 'self_heal/pr.json' });
  t.equal((await b.req('POST', '/runs/p9/events', proposed)).status, 201);
  const { r } = await expectBlocked(t, b, 'p9', 1);
  t.same(r.body.problems, ['artifact self_heal/fix.patch contains a bridge credential value']);
});
