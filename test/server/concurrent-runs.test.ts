import t from 'tap';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';
import { allEvents, records } from '../helpers/expect.js';

/**
 * CONTRACT 7: writes of one run are serialized, different runs proceed in parallel, and every run
 * keeps its own chain. Runs created in one bridge process must never share journal bookkeeping.
 */
t.test('several runs created in one process keep independent, gap-free journals', async (t) => {
  const b = await startTestBridge();
  let restarted: typeof b | null = null;
  t.teardown(async () => {
    await b.close();
    if (restarted) await cleanup(restarted);
    else await cleanup(b);
  });
  const runs = ['iso-a', 'iso-b', 'iso-c', 'iso-d'];
  const perRun = 25;
  const answers = await Promise.all(
    runs.flatMap((runId) =>
      Array.from({ length: perRun }, (_, i) =>
        b.req('POST', `/runs/${runId}/events`, ev({ id: `${runId}-${i}`, message: `m${i}` })),
      ),
    ),
  );
  t.ok(
    answers.every((a) => a.status === 201),
    'every event accepted',
  );
  for (const runId of runs) {
    const seqs = answers
      .filter((a) => a.body.event.id.startsWith(`${runId}-`))
      .map((a) => a.body.seq)
      .sort((x, y) => x - y);
    t.same(
      seqs,
      Array.from({ length: perRun }, (_, i) => i),
      `${runId}: seqs are exactly 0..${perRun - 1}`,
    );
    const recs = records(await b.journal(runId));
    t.same(
      recs.map((r) => r.seq),
      Array.from({ length: perRun }, (_, i) => i),
      `${runId}: journal records are in seq order`,
    );
    const page = await allEvents(b, runId);
    t.equal(page.length, perRun, `${runId}: every event reads back`);
  }

  // A fresh process must re-authenticate every chain from disk: nothing quarantined.
  await b.close();
  restarted = await startTestBridge(b.t);
  for (const runId of runs) {
    const r = await restarted.req('GET', `/runs/${runId}?eventLimit=200`);
    t.equal(r.status, 200);
    t.equal(r.body.run.status, 'running', `${runId} is not quarantined after restart`);
    t.equal(r.body.run.eventCount, perRun);
    t.same(
      r.body.run.events.map((e: any) => e.id).sort(),
      Array.from({ length: perRun }, (_, i) => `${runId}-${i}`).sort(),
    );
  }
});

t.test('concurrent reads during writes see a consistent prefix', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  // The run exists before the burst: a read of a run not yet created is a 404 and checks nothing.
  t.equal((await b.req('POST', '/runs/rw/events', ev({ id: 'w-first' }))).status, 201);
  const writes: Promise<unknown>[] = [];
  const reads: Promise<{ status: number; body: Record<string, any> }>[] = [];
  for (let i = 0; i < 40; i++) {
    writes.push(b.req('POST', '/runs/rw/events', ev({ id: `w${i}` })));
    if (i % 4 === 0) reads.push(b.req('GET', '/runs/rw?eventCursor=0&eventLimit=200'));
  }
  for (const w of (await Promise.all(writes)) as { status: number }[]) t.equal(w.status, 201);
  for (const r of await Promise.all(reads)) {
    t.equal(r.status, 200);
    t.equal(r.body.run.events.length, r.body.run.eventCount, 'the page holds exactly the events counted');
    t.same(
      r.body.run.events.map((e: any) => e.seq),
      Array.from({ length: r.body.run.events.length }, (_, i) => i),
      'a gap-free prefix',
    );
  }
});
