import { createHash } from 'node:crypto';
import {
  link,
  lstat,
  mkdir,
  readdir,
  readFile,
  rm,
  stat,
  symlink,
  truncate,
  writeFile,
} from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { PATH_FIELD_MAX } from '../src/contract/index.js';
import { cleanup, startTestBridge } from './helpers/bridge.js';
import { complete, driveToReady } from './helpers/complete-run.js';
import { connectMcp, live } from './helpers/mcp.js';

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

async function setup(t: { teardown(fn: () => unknown): void }) {
  const bridge = await startTestBridge();
  t.teardown(() => cleanup(bridge));
  const mcp = await connectMcp(t, bridge);
  const started = await mcp.call('harness.start_run', {
    runId: 'run-w',
    artifactRoot: bridge.t.artifactRoot,
  });
  if (started.isError) throw new Error(`start_run failed: ${JSON.stringify(started.body)}`);
  return { bridge, mcp, root: bridge.t.artifactRoot };
}

/** write_artifact of run/intake.json under one fixed event id, so a second call repeats the event. */
const writeIntakeOnce = (mcp: Awaited<ReturnType<typeof setup>>['mcp'], content: string, message?: string) =>
  mcp.call('harness.write_artifact', {
    runId: 'run-w',
    nodeId: 'intake',
    path: 'run/intake.json',
    content,
    id: 'intake-write-1',
    ...(message === undefined ? {} : { message }),
  });

t.test('writes atomically under the root and returns the claim the bridge recorded', async (t) => {
  const { bridge, mcp, root } = await setup(t);
  const text = '{"intake":"ok"}\n';
  const r = await mcp.call('harness.write_artifact', {
    runId: 'run-w',
    nodeId: 'intake',
    path: 'run/intake.json',
    content: text,
  });
  t.equal(r.isError, false, r.isError ? JSON.stringify(r.body) : 'written');
  t.equal(r.body['claim'].sha256, sha(text));
  t.equal(r.body['claim'].path, 'run/intake.json');
  t.equal(r.body['emitted'], true);
  t.equal(r.body['event'].type, 'artifact.written');
  t.equal(r.body['event'].eventSource, 'mcp');
  t.equal(await readFile(join(root, 'run/intake.json'), 'utf8'), text);
  t.same((await readdir(join(root, 'run'))).sort(), ['intake.json'], 'no temp file is left behind');

  const bytes = Buffer.from([0, 1, 2, 250, 251, 10]);
  const bin = await mcp.call('harness.write_artifact', {
    runId: 'run-w',
    nodeId: 'implement',
    path: 'session/events.jsonl',
    contentBase64: bytes.toString('base64'),
    actor: 'runtime-c',
  });
  t.equal(bin.isError, false);
  t.equal(bin.body['claim'].sha256, sha(bytes));
  t.equal(bin.body['event'].actor, 'runtime-c');

  const again = await mcp.call('harness.write_artifact', {
    runId: 'run-w',
    nodeId: 'intake',
    path: 'run/intake.json',
    content: 'v2',
  });
  t.equal(again.body['claim'].sha256, sha('v2'), 'a rewrite is verified again');
  const view = (await bridge.req('GET', '/runs/run-w')).body['run'];
  const claim = view.artifacts.find((a: { path: string }) => a.path === 'run/intake.json');
  t.equal(claim.sha256, sha('v2'));
  t.equal(view.nodes.find((n: { id: string }) => n.id === 'implement').artifactVerified, true);
});

t.test('emit false writes a supporting file without an event', async (t) => {
  const { bridge, mcp, root } = await setup(t);
  const before = await bridge.journal('run-w');
  const r = await mcp.call('harness.write_artifact', {
    runId: 'run-w',
    nodeId: 'implement',
    path: 'rca/rca.json',
    content: '{}',
    emit: false,
  });
  t.equal(r.isError, false);
  t.equal(r.body['emitted'], false);
  t.equal(r.body['sha256'], sha('{}'));
  t.equal(await readFile(join(root, 'rca/rca.json'), 'utf8'), '{}');
  t.same(await bridge.journal('run-w'), before, 'no event appended');
  // A node's own artifact is never rewritten without the event that claims it.
  await mkdir(join(root, 'run'), { recursive: true });
  await writeFile(join(root, 'run/route.json'), 'claimed later');
  const node = await mcp.call('harness.write_artifact', {
    runId: 'run-w',
    nodeId: 'implement',
    path: 'run/route.json',
    content: 'unclaimed bytes',
    emit: false,
  });
  t.equal(node.body['error'], 'artifact_write_refused');
  t.equal(node.body['message'], 'run/route.json is the artifact of node route');
  t.equal(await readFile(join(root, 'run/route.json'), 'utf8'), 'claimed later', 'not written');
});

t.test('path escapes and links are refused; nothing is written or stored', async (t) => {
  const { bridge, mcp, root } = await setup(t);
  const outside = join(bridge.t.dir, 'outside');
  await mkdir(outside);
  await symlink(outside, join(root, 'proof'));
  await mkdir(join(root, 'handoff'));
  await writeFile(join(outside, 'final.md'), 'untouched');
  await symlink(join(outside, 'final.md'), join(root, 'handoff/final.md'));
  const before = await bridge.journal('run-w');
  const cases: [string, string][] = [
    ['prove', '../outside/proof.json'],
    ['prove', `${outside}/proof.json`],
    ['prove', 'proof/proof.json'],
    ['handoff', 'handoff/final.md'],
  ];
  for (const [nodeId, path] of cases) {
    const r = await mcp.call('harness.write_artifact', { runId: 'run-w', nodeId, path, content: 'x' });
    t.equal(r.isError, true, path);
    t.equal(r.body['error'], 'artifact_write_refused', path);
    t.ok(r.body['problems'].length > 0, `${path}: problems say why`);
  }
  // Without an event no configured node path applies: the path rules alone must refuse.
  for (const path of [
    '../outside/x.json',
    `${outside}/x.json`,
    'rca/./x.json',
    'rca/../../outside/x.json',
    'proof/x.json',
  ]) {
    const r = await mcp.call('harness.write_artifact', {
      runId: 'run-w',
      nodeId: 'implement',
      path,
      content: 'x',
      emit: false,
    });
    t.equal(r.isError, true, `emit false: ${path}`);
    t.equal(r.body['error'], 'artifact_write_refused', `emit false: ${path}`);
  }
  t.same(await readdir(outside), ['final.md'], 'nothing was written through the link');
  t.equal(await readFile(join(outside, 'final.md'), 'utf8'), 'untouched');
  t.same(await bridge.journal('run-w'), before, 'the journal is byte-for-byte unchanged');
});

t.test('refusals carry a code: wrong node path, unknown or differing root, missing run', async (t) => {
  const { bridge, mcp } = await setup(t);
  const before = await bridge.journal('run-w');
  const call = (args: Record<string, unknown>) =>
    mcp.call('harness.write_artifact', { runId: 'run-w', content: 'x', ...args });
  const wrongPath = await call({ nodeId: 'prove', path: 'proof/other.json' });
  t.equal(wrongPath.body['error'], 'artifact_write_refused');
  const both = await call({ nodeId: 'prove', path: 'proof/proof.json', contentBase64: 'eA==' });
  t.equal(both.body['error'], 'invalid_tool_input');
  const tooBig = await call({
    nodeId: 'prove',
    path: 'proof/proof.json',
    content: undefined,
    contentBase64: Buffer.alloc(8 * 1024 * 1024 + 1, 0x78).toString('base64'),
  });
  t.equal(tooBig.body['error'], 'invalid_tool_input', 'content over 8 MiB');
  t.match(tooBig.body['message'], /larger than 8388608 bytes/);
  await t.rejects(readFile(join(bridge.t.artifactRoot, 'proof/proof.json')), 'nothing was written');
  // Exactly 8 MiB as base64 (about 11.2 MB of message) is answered, and written.
  const atCap = await call({
    nodeId: 'implement',
    path: 'rca/at-cap.bin',
    content: undefined,
    contentBase64: Buffer.alloc(8 * 1024 * 1024, 0x79).toString('base64'),
    emit: false,
  });
  t.equal(atCap.isError, false, JSON.stringify(atCap.body).slice(0, 200));
  t.equal((await readFile(join(bridge.t.artifactRoot, 'rca/at-cap.bin'))).length, 8 * 1024 * 1024);

  const elsewhere = join(bridge.t.dir, 'elsewhere');
  await mkdir(elsewhere);
  const differing = await call({ nodeId: 'prove', path: 'proof/proof.json', artifactRoot: elsewhere });
  t.equal(
    differing.body['error'],
    'run_already_exists',
    'the bridge refuses a root other than the sealed one',
  );
  t.same(await readdir(elsewhere), [], 'nothing written under the other root');

  const missing = await mcp.call('harness.write_artifact', {
    runId: 'no-such-run',
    nodeId: 'prove',
    path: 'proof/proof.json',
    content: 'x',
  });
  t.equal(missing.body['error'], 'run_not_found');

  const fresh = await connectMcp(t, bridge);
  const unknown = await fresh.call('harness.write_artifact', {
    runId: 'run-w',
    nodeId: 'prove',
    path: 'proof/proof.json',
    content: 'x',
  });
  t.equal(unknown.body['error'], 'artifact_root_unknown', 'a new session must name the root');
  t.same(await bridge.journal('run-w'), before, 'no refusal (nor the emit-false write) appended');
  const named = await fresh.call('harness.write_artifact', {
    runId: 'run-w',
    nodeId: 'prove',
    path: 'proof/proof.json',
    content: 'x',
    artifactRoot: bridge.t.artifactRoot,
  });
  t.equal(named.isError, false, 'the named root is cross-checked and accepted');
});

t.test(
  "a write the bridge refuses is answered with the bridge's code and problems; nothing is stored",
  async (t) => {
    const { bridge, mcp, root } = await setup(t);
    const write = (content: string, message: string) => writeIntakeOnce(mcp, content, message);
    t.equal((await write('v1', 'first')).isError, false);
    const before = await bridge.journal('run-w');
    // The same event id with another message: the bridge refuses the artifact.written.
    const refused = await write('v2', 'second');
    t.equal(refused.isError, true);
    t.equal(refused.body['error'], 'event_id_conflict', 'the bridge code, not one of the tool server');
    t.equal(refused.body['httpStatus'], 409);
    t.same(refused.body['problems'], ['message differs']);
    t.ok(before.equals(await bridge.journal('run-w')), 'journal bytes unchanged');
    t.equal(await readFile(join(root, 'run/intake.json'), 'utf8'), 'v1', 'the claimed bytes are put back');
    t.same((await readdir(join(root, 'run'))).sort(), ['intake.json'], 'no temp file is left behind');
    // A refusal for the event's own fields (another mode) puts the file back too.
    const mode = await mcp.call('harness.write_artifact', {
      runId: 'run-w',
      nodeId: 'intake',
      path: 'run/intake.json',
      content: 'v3',
      runMode: 'replay',
      eventSource: 'database',
    });
    t.equal(mode.body['error'], 'event_state_violation');
    t.equal(await readFile(join(root, 'run/intake.json'), 'utf8'), 'v1', 'put back again');
    const view = (await bridge.req('GET', '/runs/run-w')).body['run'];
    t.equal(view.completionPreview.problems.join('\n').includes('changed since'), false, 'no drift');
  },
);

t.test('a claim the bridge answers for other bytes than written is a claim mismatch', async (t) => {
  const { bridge, mcp, root } = await setup(t);
  const write = (content: string) => writeIntakeOnce(mcp, content);
  const first = await write('v1');
  t.equal(first.isError, false);
  t.equal(first.body['claim'].sha256, sha('v1'));
  const before = await bridge.journal('run-w');
  // An identical retry of the event is a duplicate: the bridge answers with the claim it stored
  // for the first bytes, which does not cover the bytes this call wrote.
  const retried = await write('v2');
  t.equal(retried.isError, true, 'never reported as written and verified');
  t.equal(retried.body['error'], 'artifact_claim_mismatch');
  t.equal(
    retried.body['message'],
    'this event id was recorded before with other bytes; the file was put back',
  );
  t.equal(await readFile(join(root, 'run/intake.json'), 'utf8'), 'v1', 'the claimed bytes are back');
  t.same(retried.body['problems'], [
    `run/intake.json: wrote sha256 ${sha('v2')}, the bridge recorded ${sha('v1')}`,
  ]);
  t.ok(before.equals(await bridge.journal('run-w')), 'journal bytes unchanged');
});

t.test('repeating an event id whose claim a later event superseded changes nothing on disk', async (t) => {
  const { bridge, mcp, root } = await setup(t);
  t.equal((await writeIntakeOnce(mcp, 'v1')).isError, false);
  const later = await mcp.call('harness.write_artifact', {
    runId: 'run-w',
    nodeId: 'intake',
    path: 'run/intake.json',
    content: 'v2',
    id: 'intake-write-2',
  });
  t.equal(later.isError, false);
  const before = await bridge.journal('run-w');
  // A retry of the first write: the bridge answers the duplicate with its claim of v1, but the
  // run's claim for the path is v2's now.
  const retried = await writeIntakeOnce(mcp, 'v1');
  t.equal(retried.isError, false, 'the duplicate is answered as such');
  t.equal(retried.body['duplicate'], true);
  t.equal(retried.body['putBack'], true, 'says the bytes in place were put back');
  t.equal(await readFile(join(root, 'run/intake.json'), 'utf8'), 'v2', 'the claimed bytes stay');
  t.ok(before.equals(await bridge.journal('run-w')), 'journal bytes unchanged');
  const check = await mcp.call('harness.finish_line_check', { runId: 'run-w' });
  t.equal(check.isError, false);
  const drift = (check.body['problems'] as string[]).filter((p) => p.includes('run/intake.json changed'));
  t.same(drift, [], 'the claim holds');
  // A plain retry of the latest write rewrites the same bytes: nothing to put back.
  const again = await mcp.call('harness.write_artifact', {
    runId: 'run-w',
    nodeId: 'intake',
    path: 'run/intake.json',
    content: 'v2',
    id: 'intake-write-2',
  });
  t.equal(again.body['duplicate'], true);
  t.equal(again.body['putBack'], undefined);
});

t.test('an argument carrying the access token is refused before anything is written or sent', async (t) => {
  const { bridge, mcp, root } = await setup(t);
  const token = bridge.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']!;
  const before = await bridge.journal('run-w');
  const entries = async () => (await readdir(root, { recursive: true })).sort();
  const listed = await entries();
  const cases: [string, Record<string, unknown>][] = [
    [
      'harness.write_artifact',
      { runId: 'run-w', nodeId: 'implement', path: `x/${token}.json`, content: '{}', emit: false },
    ],
    [
      'harness.write_artifact',
      { runId: 'run-w', nodeId: 'intake', path: 'run/intake.json', content: `t=${token}` },
    ],
    [
      'harness.write_artifact',
      {
        runId: 'run-w',
        nodeId: 'intake',
        path: 'run/intake.json',
        contentBase64: Buffer.from(`t=${token}`).toString('base64'),
      },
    ],
    [
      'harness.emit_event',
      { runId: 'run-w', type: 'node.entered', nodeId: 'intake', message: `see ${token}` },
    ],
  ];
  for (const [tool, args] of cases) {
    const r = await mcp.call(tool, args);
    t.equal(r.body['error'], 'invalid_tool_input', `${tool} ${Object.keys(args).join(',')}`);
    t.notOk(JSON.stringify(r.body).includes(token), 'the token is not echoed');
  }
  t.same(await entries(), listed, 'nothing was written under the root');
  t.ok(before.equals(await bridge.journal('run-w')), 'journal bytes unchanged');
});

t.test('a completed or quarantined run is never written, not even a supporting file', async (t) => {
  const bridge = await startTestBridge();
  t.teardown(() => cleanup(bridge));
  const mcp = await connectMcp(t, bridge);
  const root = bridge.t.artifactRoot;
  await driveToReady(bridge, 'run-done');
  t.equal((await complete(bridge, 'run-done')).status, 201);
  const final = join(root, 'handoff/final.md');
  const identity = async () => {
    const st = await stat(final);
    return { ino: st.ino, mtimeMs: st.mtimeMs };
  };
  const before = { bytes: await readFile(final), identity: await identity() };
  const journal = await bridge.journal('run-done');
  const call = (args: Record<string, unknown>) =>
    mcp.call('harness.write_artifact', { runId: 'run-done', artifactRoot: root, content: 'late', ...args });

  // The bridge would refuse the artifact.written too, but only after the file was replaced.
  const claimed = await call({ nodeId: 'handoff', path: 'handoff/final.md' });
  t.equal(claimed.body['error'], 'run_closed');
  t.equal(claimed.body['httpStatus'], undefined, 'refused by the tool server, before any event');
  t.ok((await readFile(final)).equals(before.bytes));
  // A put-back is a new file: its inode number may be the freed one again, its mtime is later.
  t.same(await identity(), before.identity, 'the file was never replaced, not even put back');
  const supporting = await call({ nodeId: 'implement', path: 'rca/late.json', emit: false });
  t.equal(supporting.body['error'], 'run_closed', 'no event would stop this one: the tool must');
  await t.rejects(lstat(join(root, 'rca/late.json')), 'nothing was written');
  t.ok((await bridge.journal('run-done')).equals(journal), 'nothing was appended');
  t.equal((await bridge.req('GET', '/runs/run-done')).body['run'].status, 'completed', 'no drift');

  // Byte drift after completion quarantines the run (CONTRACT 6): it is not written either.
  await writeFile(final, 'edited after completion\n');
  t.equal((await bridge.req('GET', '/runs/run-done')).body['run'].status, 'quarantined');
  for (const args of [
    { nodeId: 'handoff', path: 'handoff/final.md' },
    { nodeId: 'implement', path: 'rca/late.json', emit: false },
  ]) {
    const r = await call(args);
    t.equal(r.isError, true, args.path);
    t.equal(r.body['error'], 'run_quarantined', args.path);
  }
  t.equal(await readFile(final, 'utf8'), 'edited after completion\n');
  await t.rejects(lstat(join(root, 'rca/late.json')), 'nothing was written');
  t.ok((await bridge.journal('run-done')).equals(journal), 'nothing was appended');
});

t.test('bytes in place that cannot be kept for a put-back are not overwritten', async (t) => {
  const { bridge, mcp, root } = await setup(t);
  await mkdir(join(root, 'run'));
  // Larger than a write may be: were it overwritten and the event refused, it could not go back.
  const big = join(root, 'run/intake.json');
  await writeFile(big, '');
  await truncate(big, 8 * 1024 * 1024 + 1);
  // A file with a second name is refused by the no-link reader: its bytes cannot be kept either.
  await mkdir(join(root, 'graph'));
  await writeFile(join(root, 'graph/graph.json'), 'linked');
  await link(join(root, 'graph/graph.json'), join(root, 'graph/other-name.json'));
  const before = await bridge.journal('run-w');
  const cases: [string, string, string][] = [
    ['intake', 'run/intake.json', 'run/intake.json is larger than 8388608 bytes'],
    ['code-intelligence', 'graph/graph.json', 'graph/graph.json is a hard link (2 names)'],
  ];
  for (const [nodeId, path, problem] of cases) {
    const r = await mcp.call('harness.write_artifact', { runId: 'run-w', nodeId, path, content: 'new' });
    t.equal(r.body['error'], 'artifact_write_refused', path);
    t.same(r.body['problems'], [problem], path);
  }
  t.equal((await stat(big)).size, 8 * 1024 * 1024 + 1, 'the large file is untouched');
  t.equal(await readFile(join(root, 'graph/graph.json'), 'utf8'), 'linked');
  t.equal((await stat(join(root, 'graph/graph.json'))).nlink, 2, 'still the same file under two names');
  t.same((await readdir(join(root, 'run'))).sort(), ['intake.json'], 'no temp file');
  t.ok(before.equals(await bridge.journal('run-w')), 'journal bytes unchanged');
});

t.test('a refused event puts back the bytes it replaced; a file that was absent is removed', async (t) => {
  const { bridge, mcp, root } = await setup(t);
  const refusedFor = (path: string, nodeId: string, content: string) =>
    // replay mode on a live run: the bridge refuses the artifact.written after the write.
    mcp.call('harness.write_artifact', {
      runId: 'run-w',
      nodeId,
      path,
      content,
      runMode: 'replay',
      eventSource: 'database',
    });
  const entered = { runId: 'run-w', type: 'node.entered', nodeId: 'intake', ...live };
  t.equal((await mcp.call('harness.emit_event', entered)).isError, false, 'the run is live');
  await mkdir(join(root, 'run'));
  await writeFile(join(root, 'run/intake.json'), 'in place');
  const before = await bridge.journal('run-w');
  const replaced = await refusedFor('run/intake.json', 'intake', 'new bytes');
  t.equal(replaced.body['error'], 'event_state_violation');
  t.equal(await readFile(join(root, 'run/intake.json'), 'utf8'), 'in place', 'the old bytes are back');
  const absent = await refusedFor('run/route.json', 'route', 'first bytes');
  t.equal(absent.body['error'], 'event_state_violation');
  t.same((await readdir(join(root, 'run'))).sort(), ['intake.json'], 'the new file is gone, no temp file');
  t.ok(before.equals(await bridge.journal('run-w')), 'journal bytes unchanged');
  const view = (await bridge.req('GET', '/runs/run-w')).body['run'];
  t.same(view.artifacts, [], 'nothing was claimed');
});

t.test(
  'a repeated event id never leaves a file that was absent unless its claim is of those bytes',
  async (t) => {
    const { bridge, mcp, root } = await setup(t);
    t.equal((await writeIntakeOnce(mcp, 'v1')).isError, false);
    await rm(join(root, 'run/intake.json'));
    const before = await bridge.journal('run-w');
    const other = await writeIntakeOnce(mcp, 'v2');
    t.equal(other.body['error'], 'artifact_claim_mismatch');
    t.equal(
      other.body['message'],
      'this event id was recorded before with other bytes; the file was removed',
    );
    t.same(await readdir(join(root, 'run')), [], 'v2, which nothing claims, is gone');
    // The same bytes again: the duplicate's claim covers them, so the claimed artifact is back.
    const same = await writeIntakeOnce(mcp, 'v1');
    t.equal(same.isError, false);
    t.equal(same.body['duplicate'], true);
    t.equal(await readFile(join(root, 'run/intake.json'), 'utf8'), 'v1', 'the claimed bytes stay');
    t.ok(before.equals(await bridge.journal('run-w')), 'journal bytes unchanged');
  },
);

/** write_artifact of a supporting file (no event) under run-w. */
const writeSupporting = (mcp: Awaited<ReturnType<typeof setup>>['mcp'], args: Record<string, unknown>) =>
  mcp.call('harness.write_artifact', { runId: 'run-w', nodeId: 'implement', emit: false, ...args });

/** The problems of a refusal by the input schema name `field`. */
const namesField = (r: { body: Record<string, any> }, field: string) =>
  (r.body['problems'] ?? []).some((p: string) => p.startsWith(`/${field} `));

t.test('contentBase64 that is not plain base64 is refused by the input schema', async (t) => {
  const { bridge, mcp, root } = await setup(t);
  const before = await bridge.journal('run-w');
  // Node's decoder takes every one of these (it skips what it does not know, and reads base64url).
  for (const contentBase64 of ['not base64!', 'eA==eA==', 'ab-_', 'eA===', 'eA==\n']) {
    const r = await writeSupporting(mcp, { path: 'rca/b64.bin', contentBase64 });
    t.equal(r.body['error'], 'invalid_tool_input', JSON.stringify(contentBase64));
    t.ok(namesField(r, 'contentBase64'), 'the problem names the field');
  }
  await t.rejects(lstat(join(root, 'rca')), 'nothing was written');
  const plain = await writeSupporting(mcp, { path: 'rca/b64.bin', contentBase64: 'eA==' });
  t.equal(plain.isError, false, 'plain base64 is written');
  t.equal(await readFile(join(root, 'rca/b64.bin'), 'utf8'), 'x');
  t.ok(before.equals(await bridge.journal('run-w')), 'journal bytes unchanged');
});

t.test('a path one over PATH_FIELD_MAX is refused by the input schema; one at it is written', async (t) => {
  const { bridge, mcp, root } = await setup(t);
  const before = await bridge.journal('run-w');
  // Segments of at most 200 characters: the file system's own name limit is not what is tested.
  const pathOf = (length: number) => {
    const segments: string[] = [];
    for (let left = length; left > 0; left -= 201) segments.push('p'.repeat(Math.min(200, left)));
    return segments.join('/');
  };
  const over = pathOf(PATH_FIELD_MAX + 1);
  t.equal(over.length, PATH_FIELD_MAX + 1);
  const long = await writeSupporting(mcp, { path: over, content: 'x' });
  t.equal(long.body['error'], 'invalid_tool_input');
  t.ok(namesField(long, 'path'), 'the problem names the field');
  await t.rejects(lstat(join(root, 'p'.repeat(200))), 'nothing was written');
  const atMax = pathOf(PATH_FIELD_MAX);
  t.equal(atMax.length, PATH_FIELD_MAX);
  const fits = await writeSupporting(mcp, { path: atMax, content: 'x' });
  t.equal(fits.isError, false, fits.isError ? JSON.stringify(fits.body).slice(0, 300) : 'accepted');
  t.equal(await readFile(join(root, atMax), 'utf8'), 'x', 'a path at the ceiling is written');
  t.ok(before.equals(await bridge.journal('run-w')), 'journal bytes unchanged');
});
