import { createHash } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { QUARANTINE_REASONS_MAX, RESPONSE_MAX_BYTES } from '../src/contract/index.js';
import { cleanup, ev, startTestBridge } from './helpers/bridge.js';
import { complete, driveToReady, expectBlocked } from './helpers/complete-run.js';
import { expectRejected, records, writeArtifact } from './helpers/expect.js';

/**
 * CONTRACT 4 and 6: a packet naming thousands of `{path, sha256}` references. Every named path is
 * checked, past the 10000 the bridge once stopped at (NAMED_PATHS_MAX, now beyond what documents
 * within DOCUMENT_MAX_BYTES can name: test/finish-line/document-refs.test.ts); every missing one
 * is a problem, and the answers that carry them (the 409 of a refused completion, the quarantine
 * of a completed run and its reads) stay bounded.
 */
const sha = createHash('sha256').update('').digest('hex');
const namingMissing = (n: number, dir = 'gone') =>
  JSON.stringify({
    schema: 'harness.run-packet.v2',
    artifacts: Array.from({ length: n }, (_, i) => ({ path: `${dir}/${i}.txt`, sha256: sha })),
  });
const bytes = (body: unknown) => Buffer.byteLength(JSON.stringify(body));
const under = 9000;
/** More than the 10000 paths the documents could name before issue 29. */
const many = 12_000;

/** `n` tiny files under `dir/`, written 64 at a time, and a packet naming each by its digest. */
async function manyFiles(root: string, n: number, dir = 'many') {
  const files = Array.from({ length: n }, (_, i) => ({ path: `${dir}/d${i % 200}/${i}.txt`, sha256: sha }));
  for (let i = 0; i < n; i += 64)
    await Promise.all(files.slice(i, i + 64).map((f) => writeArtifact(root, f.path, '')));
  return files;
}

t.test(`${many} named files: a run completes and re-reads; one bad path among them refuses`, async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const root = b.t.artifactRoot;
  await driveToReady(b, 'many');
  await driveToReady(b, 'bad');
  const files = await manyFiles(root, many);
  await writeArtifact(root, 'run/packet.json', JSON.stringify({ artifacts: files }));
  const r = await complete(b, 'many');
  t.equal(r.status, 201, JSON.stringify(r.body).slice(0, 500));
  for (const read of ['first', 'second']) {
    const got = await b.req('GET', '/runs/many');
    t.equal(got.body.run.status, 'completed', `${read} read`);
  }
  // Past the old 10000 bound in every order (the document's, the sorted one): an escaping path
  // and a file holding a credential value.
  const last =
    files
      .map((f) => f.path)
      .sort()
      .at(-1) ?? '';
  await writeArtifact(root, last, b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']);
  const bad = [...files, { path: 'zz/../../outside.txt', sha256: sha }];
  await writeArtifact(root, 'run/packet.json', JSON.stringify({ artifacts: bad }));
  const { r: refused } = await expectBlocked(t, b, 'bad', 2);
  t.match(refused.body.problems, [
    `artifact ${last} contains a bridge credential value`,
    /^artifact zz\/\.\.\/\.\.\/outside\.txt named in run\/packet\.json: /,
  ]);
  // The completed run's read finds the same, and the packet changed: quarantined.
  const got = await b.req('GET', '/runs/many');
  t.equal(got.body.run.status, 'quarantined');
  t.match(got.body.run.quarantine.reasons, [
    `artifact ${last} contains a bridge credential value`,
    /^artifact zz\/\.\.\/\.\.\/outside\.txt named in run\/packet\.json: /,
    'finish-line document run/packet.json changed after completion',
  ]);
});

t.test(`${under} missing named paths: the refused completion's problems are bounded`, async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'under');
  await writeArtifact(b.t.artifactRoot, 'run/packet.json', namingMissing(under));
  const before = await b.journal('under');
  const r = await complete(b, 'under');
  t.equal(r.status, 409);
  t.equal(r.body.error, 'finish_line_blocked');
  t.ok(bytes(r.body) <= 80 * 1024, `409 body ${bytes(r.body)} bytes is bounded`);
  const problems: string[] = r.body.problems;
  t.ok(problems.length < under, 'not every problem is listed');
  t.match(problems[0], /^artifact gone\/\d+\.txt named in run\/packet\.json: /);
  const more = Number(/^(\d+) more problems not shown$/.exec(problems.at(-1) ?? '')?.[1]);
  t.equal(problems.length - 1 + more, under, 'shown plus the count is every problem');
  const after = await b.journal('under');
  t.ok(after.subarray(0, before.length).equals(before), 'earlier records untouched');
  t.match(records(after.subarray(before.length)), [{ event: { type: 'run.blocked', actor: 'system' } }]);
  t.equal(records(after.subarray(before.length)).length, 1, 'exactly one record appended');
  t.equal((await b.req('GET', '/runs/under')).body.run.status, 'blocked');
});

t.test(`${under} missing named paths after completion: bounded reasons and answers`, async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'drift');
  await writeArtifact(b.t.artifactRoot, 'notes/kept.txt', 'x');
  t.equal((await complete(b, 'drift')).status, 201);
  // One problem per missing path, and two from the completion's seal: the packet was absent, and
  // the paths documents name were none.
  await writeArtifact(b.t.artifactRoot, 'run/packet.json', namingMissing(under));
  const started = Date.now();
  const got = await b.req('GET', '/runs/drift');
  t.ok(Date.now() - started < 5000, `the quarantining read took ${Date.now() - started} ms`);
  t.equal(got.status, 200);
  t.ok(bytes(got.body) < RESPONSE_MAX_BYTES, `GET body ${bytes(got.body)} bytes is under 1 MiB`);
  const reasons: string[] = got.body.run.quarantine.reasons;
  t.equal(got.body.run.status, 'quarantined');
  t.equal(reasons.length, QUARANTINE_REASONS_MAX + 1, 'the first reasons and one count line');
  t.equal(reasons.at(-1), `${under + 2 - QUARANTINE_REASONS_MAX} more reasons not kept`);
  t.ok(bytes(reasons) <= 64 * 1024, 'the reasons are within the view budget');
  const list = await b.req('GET', '/runs');
  t.equal(list.body.runs[0].status, 'quarantined');
  const refused = await expectRejected(
    t,
    b,
    'drift',
    () => b.req('POST', '/runs/drift/events', ev({ nodeId: 'handoff' })),
    409,
    'run_quarantined',
  );
  t.equal(refused.body.problems.length, QUARANTINE_REASONS_MAX + 1, 'the 409 lists the kept reasons');
  // Removing the flood does not lift the quarantine.
  await rm(join(b.t.artifactRoot, 'run/packet.json'));
  t.equal((await b.req('GET', '/runs/drift')).body.run.status, 'quarantined');
});

t.test(
  'reads at once of a run that drifted re-verify it one at a time: every reason counted once',
  async (t) => {
    const b = await startTestBridge();
    t.teardown(() => cleanup(b));
    await driveToReady(b, 'busy');
    t.equal((await complete(b, 'busy')).status, 201);
    await writeArtifact(b.t.artifactRoot, 'run/packet.json', namingMissing(under));
    const reads = await Promise.all([
      b.req('GET', '/runs/busy'),
      b.req('GET', '/runs/busy'),
      b.req('GET', '/runs'),
      b.req('GET', '/runs/busy'),
    ]);
    for (const r of reads) t.equal(r.status, 200);
    const reasons: string[] = (await b.req('GET', '/runs/busy')).body.run.quarantine.reasons;
    t.equal(reasons.length, QUARANTINE_REASONS_MAX + 1);
    t.equal(
      reasons.at(-1),
      `${under + 2 - QUARANTINE_REASONS_MAX} more reasons not kept`,
      'no reason counted twice',
    );
  },
);

t.test('kept reasons longer than the view budget are cut in every read of the run', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'long');
  t.equal((await complete(b, 'long')).status, 201);
  // QUARANTINE_REASONS_MAX reasons of over 1000 bytes each: past the 64 KiB a view shows.
  const deep = Array.from({ length: 4 }, (_, i) => String(i).repeat(250)).join('/');
  await writeArtifact(b.t.artifactRoot, 'run/packet.json', namingMissing(2 * QUARANTINE_REASONS_MAX, deep));
  // The read that quarantines the run, then one that finds it quarantined when it loads it.
  for (const read of ['quarantining', 'later']) {
    const reasons: string[] = (await b.req('GET', '/runs/long')).body.run.quarantine.reasons;
    t.ok(bytes(reasons) <= 64 * 1024, `${read} read: ${bytes(reasons)} bytes of reasons`);
    t.match(reasons.at(-1), /^\d+ more reasons not shown$/, `${read} read: the cut is counted`);
  }
});
