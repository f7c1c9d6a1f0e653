import { createHash } from 'node:crypto';
import { mkdir, readFile, realpath, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import type { StoredEvent } from '../src/contract/index.js';
import { DRIFT_FILE, readDriftQuarantines } from '../src/storage/drift-quarantines.js';
import { runPaths } from '../src/storage/paths.js';
import { cleanup, ev, startTestBridge } from './helpers/bridge.js';
import { runVerify } from './helpers/cli.js';
import { complete, driveToReady } from './helpers/complete-run.js';
import { expectRejected, writeArtifact } from './helpers/expect.js';
import { recordHandleSyncs } from './helpers/patch-fs.js';

t.test('a completed run stays completed while nothing drifts, and the verdict cache is hit', async (t) => {
  let calls = 0;
  const b = await startTestBridge(undefined, {
    finishLine: async () => {
      calls++;
      return [];
    },
  });
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'r1');
  const done = await complete(b, 'r1');
  t.equal(done.status, 201, JSON.stringify(done.body));
  t.equal(calls, 1, 'the gate ran the validators once');
  for (let i = 0; i < 3; i++) {
    const got = await b.req('GET', '/runs/r1?eventLimit=1');
    t.equal(got.body.run.status, 'completed');
  }
  t.equal(calls, 2, 'one execution for the first read, the rest from the cache');
  const health = await b.req('GET', '/health');
  t.same(health.body.cache, { executions: 1, hits: 2 });
  await expectRejected(
    t,
    b,
    'r1',
    () => b.req('POST', '/runs/r1/events', ev({ nodeId: 'handoff' })),
    409,
    'run_closed',
  );
});

t.test('byte drift in a required artifact quarantines the completed run', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'r2');
  t.equal((await complete(b, 'r2')).status, 201);
  await writeFile(join(b.t.artifactRoot, 'handoff/final.md'), 'edited after completion\n');
  const got = await b.req('GET', '/runs/r2');
  t.equal(got.status, 200, JSON.stringify(got.body).slice(0, 300));
  t.equal(got.body.run.status, 'quarantined');
  t.match(got.body.run.quarantine.reasons, [/handoff\/final\.md changed after completion/]);
  t.same(await b.req('GET', '/runs/r2').then((r) => r.body), got.body, 'the next read answers the same');
  const list = await b.req('GET', '/runs');
  t.equal(list.body.runs[0].status, 'quarantined', 'the listing agrees');
  const before = await b.journal('r2');
  const write = await b.req('POST', '/runs/r2/events', ev({ nodeId: 'handoff' }));
  t.equal(write.status, 409);
  t.equal(write.body.error, 'run_quarantined');
  t.ok(before.equals(await b.journal('r2')), 'journal unchanged');
  // A create/sync call for the quarantined run is refused as the event is, never answered 500.
  await expectRejected(t, b, 'r2', () => b.req('POST', '/runs', { id: 'r2' }), 409, 'run_quarantined');
});

t.test(
  'a drift quarantine outlasts putting the bytes back and a restart, and only for that run',
  async (t) => {
    const b = await startTestBridge();
    t.teardown(() => rm(b.t.dir, { recursive: true, force: true }));
    await driveToReady(b, 'r9');
    t.equal((await complete(b, 'r9')).status, 201);
    const handoff = join(b.t.artifactRoot, 'handoff/final.md');
    const bytes = await readFile(handoff);
    await writeFile(handoff, 'edited after completion\n');
    const reason = /^artifact handoff\/final\.md changed after completion/;
    const got = await b.req('GET', '/runs/r9');
    t.equal(got.body.run.status, 'quarantined');
    await writeFile(handoff, bytes);
    t.equal(
      (await b.req('GET', '/runs/r9')).body.run.status,
      'quarantined',
      'the bytes put back change nothing',
    );
    await b.close();

    const verified = await runVerify(b.t.env);
    t.equal(verified.code, 1, verified.stdout);
    t.match(
      verified.stdout,
      /^TAMPERED r9: quarantined-runs\.jsonl: a read found artifact handoff\/final\.md changed/m,
    );
    const b2 = await startTestBridge(b.t);
    const again = await b2.req('GET', '/runs/r9');
    t.equal(again.body.run.status, 'quarantined', 'quarantined after the restart');
    t.match(again.body.run.quarantine.reasons, [reason]);
    t.equal((await b2.req('GET', '/runs')).body.runs[0].status, 'quarantined', 'the listing agrees');
    const before = await b2.journal('r9');
    const write = await b2.req('POST', '/runs/r9/events', ev({ nodeId: 'handoff' }));
    t.equal(write.body.error, 'run_quarantined');
    t.ok(before.equals(await b2.journal('r9')), 'journal unchanged');
    await b2.close();

    // The run archived (its directory removed) and a new run made under the same ID: the old
    // record does not reach it.
    await rm(runPaths(b.t.dataDir, 'r9').dir, { recursive: true });
    const b3 = await startTestBridge(b.t);
    t.equal((await b3.req('POST', '/runs/r9/events', ev())).status, 201, 'a new run r9');
    await b3.close();
    const b4 = await startTestBridge(b.t);
    t.teardown(() => cleanup(b4));
    t.equal((await b4.req('GET', '/runs/r9')).body.run.status, 'running', 'the new run is not quarantined');
  },
);

t.test('a claimed artifact deleted after completion quarantines the run', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'r5');
  t.equal((await complete(b, 'r5')).status, 201);
  await rm(join(b.t.artifactRoot, 'run/intake.json'));
  const got = await b.req('GET', '/runs/r5');
  t.equal(got.body.run.status, 'quarantined');
  t.match(got.body.run.quarantine.reasons, [/^artifact run\/intake\.json: run\/intake\.json does not exist/]);
});

t.test('a credential written into an artifact quarantines the run', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'r3');
  t.equal((await complete(b, 'r3')).status, 201);
  await writeFile(join(b.t.artifactRoot, 'rca-notes.txt'), 'unreferenced files are not scanned');
  t.equal((await b.req('GET', '/runs/r3')).body.run.status, 'completed');
  const token = b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN'];
  await writeFile(join(b.t.artifactRoot, 'run/packet.json'), JSON.stringify({ leaked: `x${token}y` }));
  // A listing shows the run as its record says and that it is due for re-verification; reading
  // the run re-verifies it.
  const listed = await b.req('GET', '/runs');
  t.match(listed.body.runs[0], { status: 'completed', reverificationDue: true });
  const got = await b.req('GET', '/runs/r3');
  t.equal(got.body.run.status, 'quarantined');
  t.match(got.body.run.quarantine.reasons, [/run\/packet\.json contains a bridge credential value/]);
  t.notMatch(JSON.stringify(got.body), token, 'the credential itself is never echoed');
  const after = await b.req('GET', '/runs');
  t.match(
    after.body.runs[0],
    { status: 'quarantined', reverificationDue: false },
    'the listing agrees from then on',
  );
  t.notMatch(JSON.stringify(after.body), token);
});

t.test('the finish-line verdict failing on read quarantines the run', async (t) => {
  let fail = false;
  const b = await startTestBridge(undefined, {
    finishLine: async () => (fail ? ['proof: no longer valid'] : []),
  });
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'r4');
  t.equal((await complete(b, 'r4')).status, 201);
  fail = true;
  const got = await b.req('GET', '/runs/r4');
  t.equal(got.body.run.status, 'quarantined');
  t.match(got.body.run.quarantine.reasons, ['proof: no longer valid']);
});

t.test('validator code changed since completion quarantines the run on read', async (t) => {
  let verdicts = 0;
  const b = await startTestBridge(undefined, {
    finishLine: async () => {
      verdicts++;
      return [];
    },
  });
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'r6');
  t.equal((await complete(b, 'r6')).status, 201);
  const journal = await b.journal('r6');
  // As if the bridge restarted on other validator code: the sealed digest no longer matches.
  const sealed = await b.ctx.validatorDigest();
  const other = sealed.replace(/^./, (c) => (c === '0' ? '1' : '0'));
  b.ctx.validatorDigest = async () => other;

  const got = await b.req('GET', '/runs/r6');
  t.equal(got.status, 200);
  t.equal(got.body.run.status, 'quarantined', "the other code's passing verdict is not trusted");
  t.same(got.body.run.quarantine?.reasons, ['validator code changed since completion']);
  t.equal(verdicts, 1, 'only the completion ran the gate: drift is found before any verdict');
  const list = await b.req('GET', '/runs');
  t.equal(list.body.runs[0].status, 'quarantined', 'the listing agrees');
  const write = await b.req('POST', '/runs/r6/events', ev({ nodeId: 'handoff' }));
  t.equal(write.status, 409);
  t.equal(write.body.error, 'run_quarantined');
  t.ok(journal.equals(await b.journal('r6')), 'journal bytes unchanged');
});

t.test(
  'repeating POST /runs for a drifted completed run re-verifies it: run_quarantined, never a stale completed',
  async (t) => {
    const b = await startTestBridge();
    t.teardown(() => cleanup(b));
    await driveToReady(b, 'r6');
    t.equal((await complete(b, 'r6')).status, 201);
    const same = await b.req('POST', '/runs', { id: 'r6' });
    t.equal(same.status, 200, 'an unchanged completed run repeats as itself');
    t.equal(same.body.run.status, 'completed');
    await writeFile(join(b.t.artifactRoot, 'handoff/final.md'), 'edited after completion\n');
    const res = await expectRejected(
      t,
      b,
      'r6',
      () => b.req('POST', '/runs', { id: 'r6' }),
      409,
      'run_quarantined',
    );
    t.match(res.body.problems, [/handoff\/final\.md changed after completion/]);
    const got = await b.req('GET', '/runs/r6');
    t.equal(got.body.run.status, 'quarantined', 'the read agrees: the repeat quarantined the run');
  },
);

t.test(
  'finish-line documents the completion read are sealed: drift in any quarantines the run',
  async (t) => {
    // The validators pass whatever the documents say: only the seal can notice them changing.
    const b = await startTestBridge(undefined, { finishLine: async () => [] });
    t.teardown(() => cleanup(b));
    const root = b.t.artifactRoot;
    const packet = (note: string) =>
      JSON.stringify({ note, evidence: [{ path: 'notes/a.md', sha256: `sha256:${'0'.repeat(64)}` }] });
    const cases: [string, () => Promise<unknown>, string][] = [
      ['rewritten', () => writeFile(join(root, 'run/packet.json'), packet('v2')), 'run/packet.json changed'],
      ['removed', () => rm(join(root, 'run/packet.json')), 'run/packet.json was removed'],
      ['added', () => writeFile(join(root, 'rca/rca.json'), '{}'), 'rca/rca.json appeared'],
      [
        'named file edited',
        () => writeFile(join(root, 'notes/a.md'), 'b\n'),
        'a file the finish-line documents name',
      ],
    ];
    for (const [i, [name, drift, reason]] of cases.entries()) {
      const runId = `doc${i}`;
      for (const dir of ['notes', 'rca', 'run']) await mkdir(join(root, dir), { recursive: true });
      await rm(join(root, 'rca/rca.json'), { force: true });
      await writeFile(join(root, 'notes/a.md'), 'a\n');
      await writeFile(join(root, 'run/packet.json'), packet('v1'));
      await driveToReady(b, runId);
      t.equal((await complete(b, runId)).status, 201, `${name}: completed`);
      t.equal(
        (await b.req('GET', `/runs/${runId}`)).body.run.status,
        'completed',
        `${name}: unchanged, completed`,
      );
      await drift();
      const got = await b.req('GET', `/runs/${runId}`);
      t.equal(got.body.run.status, 'quarantined', `${name}: quarantined`);
      t.match(got.body.run.quarantine.reasons.join('\n'), reason, `${name}: the reason says what drifted`);
    }
  },
);

t.test('drift gone by the recheck (a writer mid-rename) leaves the completed run completed', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'r10');
  t.equal((await complete(b, 'r10')).status, 201);
  const handoff = join(b.t.artifactRoot, 'handoff/final.md');
  const bytes = await readFile(handoff);
  await writeFile(handoff, 'half-written\n');
  // The writer's rename lands between the read's first pass and its recheck.
  const pool = b.ctx.pool;
  const claimEach = pool.claimEach.bind(pool);
  let passes = 0;
  pool.claimEach = async (...args) => {
    await claimEach(...args);
    if (++passes === 1) await writeFile(handoff, bytes);
  };
  const got = await b.req('GET', '/runs/r10');
  t.equal(got.body.run.status, 'completed', JSON.stringify(got.body.run.quarantine));
  t.equal(passes, 2, 'the first pass saw the drift, the recheck did not');
  t.same(await readDriftQuarantines(b.t.dataDir), [], 'no drift recorded for the next start');
});

t.test('a completion record that carries no seal quarantines the run on read', async (t) => {
  const b = await startTestBridge(undefined, { finishLine: async () => [] });
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'r11');
  // Recorded as a bridge from before completion seals recorded it: accepted, no seal.
  const loaded = await b.ctx.store.load('r11');
  if (loaded.kind !== 'open') throw new Error('not open');
  const event = {
    ...ev({ type: 'run.completed', nodeId: 'handoff', status: 'passed' }),
    id: 'done',
    ts: new Date().toISOString(),
  };
  await b.ctx.store.append(loaded.run, event as StoredEvent, null).durable;
  b.ctx.store.release(loaded.run);
  const journal = await b.journal('r11');
  const got = await b.req('GET', '/runs/r11');
  t.equal(got.status, 200, JSON.stringify(got.body).slice(0, 300));
  t.equal(got.body.run.status, 'quarantined');
  t.same(got.body.run.quarantine.reasons, ['the completion record carries no seal']);
  t.ok(journal.equals(await b.journal('r11')), 'journal bytes unchanged');
});

t.test('the verdict cache keeps at most 4096 verdicts, dropping the oldest first', async (t) => {
  const b = await startTestBridge(undefined, { finishLine: async () => [] });
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'r12');
  t.equal((await complete(b, 'r12')).status, 201);
  // As if 4096 other reads had filled it (reverify.ts VERDICT_CACHE_MAX).
  for (let i = 0; i < 4096; i++) b.ctx.verdicts.set(`earlier-${i}`, []);
  t.equal((await b.req('GET', '/runs/r12')).body.run.status, 'completed');
  t.same((await b.req('GET', '/health')).body.cache, { executions: 1, hits: 0 }, 'a new verdict, cached');
  t.equal(b.ctx.verdicts.size, 4096, 'still 4096 verdicts');
  t.notOk(b.ctx.verdicts.has('earlier-0'), 'the oldest was dropped');
  t.ok(b.ctx.verdicts.has('earlier-1'), 'only the oldest');
  t.equal((await b.req('GET', '/runs/r12')).body.run.status, 'completed');
  t.same((await b.req('GET', '/health')).body.cache, { executions: 1, hits: 1 }, 'the new verdict is a hit');
});

t.test('drift found on two runs is recorded for both, in a file private to the bridge', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  for (const runId of ['r13', 'r14']) {
    await driveToReady(b, runId);
    t.equal((await complete(b, runId)).status, 201);
  }
  // Both runs claim this file: each read appends its run's record after the other's.
  await writeFile(join(b.t.artifactRoot, 'handoff/final.md'), 'edited after completion\n');
  for (const runId of ['r13', 'r14'])
    t.equal((await b.req('GET', `/runs/${runId}`)).body.run.status, 'quarantined');
  const recorded = await readDriftQuarantines(b.t.dataDir);
  t.same(
    recorded.map((d) => d.runId),
    ['r13', 'r14'],
    'one record per run, the first kept',
  );
  t.match(recorded, [{ reason: /handoff\/final\.md changed after completion/ }, { reason: /final\.md/ }]);
  const file = join(b.t.dataDir, DRIFT_FILE);
  t.equal((await stat(file)).mode & 0o777, 0o600, `${DRIFT_FILE}: 0600`);
});

t.test('a claimed artifact a rule or document also reads drifts as its claim alone', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'r15');
  // The packet names one claimed artifact; the production-readiness rule reads another by name.
  const handoff = await readFile(join(b.t.artifactRoot, 'handoff/final.md'));
  const sha256 = createHash('sha256').update(handoff).digest('hex');
  await writeArtifact(
    b.t.artifactRoot,
    'run/packet.json',
    JSON.stringify({ artifacts: [{ path: 'handoff/final.md', sha256 }] }),
  );
  t.equal((await complete(b, 'r15')).status, 201);
  for (const path of ['handoff/final.md', 'production/layer-assessment.json'])
    await writeFile(join(b.t.artifactRoot, path), 'edited after completion\n');
  const got = await b.req('GET', '/runs/r15');
  t.equal(got.body.run.status, 'quarantined');
  t.same(got.body.run.quarantine.reasons, [
    'artifact handoff/final.md changed after completion',
    'artifact production/layer-assessment.json changed after completion',
  ]);
});

t.test('a drift record is synced, file and directory entry, before the read answers', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  await driveToReady(b, 'r16');
  t.equal((await complete(b, 'r16')).status, 201);
  await writeFile(join(b.t.artifactRoot, 'handoff/final.md'), 'edited after completion\n');
  const dataDir = await realpath(b.t.dataDir);
  const seen = await recordHandleSyncs(t);
  t.equal((await b.req('GET', '/runs/r16')).body.run.status, 'quarantined');
  const file = seen.indexOf(`datasync ${join(dataDir, DRIFT_FILE)}`);
  t.ok(file >= 0, `${DRIFT_FILE} is synced: ${seen}`);
  t.ok(seen.indexOf(`sync ${dataDir}`, file) > file, 'then the data directory holding it');
});
