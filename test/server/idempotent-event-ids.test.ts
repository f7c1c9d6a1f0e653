import t from 'tap';
import { IdIndex } from '../../src/storage/id-index.js';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';
import { expectRejected, records } from '../helpers/expect.js';

/**
 * CONTRACT 4: a repeat of an event `id` with identical content is 200 {duplicate:true} and appends
 * nothing; the same id with other content is 409 event_id_conflict naming the differing fields.
 */
t.test('idempotent event ids', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const RUN = 'idem';
  const first = await b.req('POST', `/runs/${RUN}/events`, ev({ id: 'e1', message: 'hello' }));
  t.equal(first.status, 201);
  t.equal((await b.req('POST', `/runs/${RUN}/events`, ev({ id: 'e2' }))).status, 201);

  t.test('an identical repeat: 200 duplicate, same seq, nothing appended', async (t) => {
    const before = await b.journal(RUN);
    const r = await b.req('POST', `/runs/${RUN}/events`, ev({ id: 'e1', message: 'hello' }));
    t.equal(r.status, 200);
    t.equal(r.body['duplicate'], true);
    t.equal(r.body['seq'], 0);
    t.equal(r.body['event'].id, 'e1');
    t.equal(r.body['event'].ts, first.body['event'].ts, 'the stored event is returned');
    t.ok((await b.journal(RUN)).equals(before), 'journal bytes unchanged');
  });

  t.test('a repeat naming the stored ts is still identical', async (t) => {
    const r = await b.req(
      'POST',
      `/runs/${RUN}/events`,
      ev({ id: 'e1', message: 'hello', ts: first.body['event'].ts }),
    );
    t.equal(r.status, 200);
    t.equal(r.body['duplicate'], true);
  });

  t.test('same id, other content: 409 event_id_conflict naming the fields', async (t) => {
    const cases: [Record<string, unknown>, string[]][] = [
      [{ message: 'other' }, ['message']],
      [{ message: 'hello', status: 'warn' }, ['status']],
      [{ message: 'hello', nodeId: 'route' }, ['nodeId']],
      [{ message: 'hello', skipReason: 'extra' }, ['skipReason']],
      [{ message: 'other', actor: 'harness' }, ['actor', 'message']],
      [{ message: 'hello', ts: '2020-01-01T00:00:00.000Z' }, ['ts']],
      [{ message: 'hello', type: 'gate.fired' }, ['type']],
    ];
    for (const [over, fields] of cases) {
      const r = await expectRejected(
        t,
        b,
        RUN,
        () => b.req('POST', `/runs/${RUN}/events`, ev({ id: 'e1', ...over })),
        409,
        'event_id_conflict',
      );
      for (const f of fields) {
        t.ok(
          r.body['problems'].some((p: string) => p.startsWith(`${f} `)),
          `problems name ${f}: ${JSON.stringify(r.body['problems'])}`,
        );
      }
      t.equal(r.body['problems'].length, fields.length, 'only the differing fields are named');
    }
  });

  t.test('a repeat that omits a field the stored event has: 409 naming it', async (t) => {
    t.equal((await b.req('POST', `/runs/${RUN}/events`, ev({ id: 'e3', nodeState: 'active' }))).status, 201);
    const r = await expectRejected(
      t,
      b,
      RUN,
      () => b.req('POST', `/runs/${RUN}/events`, ev({ id: 'e3' })),
      409,
      'event_id_conflict',
    );
    t.same(r.body['problems'], ['nodeState differs']);
  });

  t.test('events without an id get distinct generated ids', async (t) => {
    const a = await b.req('POST', `/runs/${RUN}/events`, ev());
    const c = await b.req('POST', `/runs/${RUN}/events`, ev());
    t.equal(a.status, 201);
    t.equal(c.status, 201);
    t.not(a.body['event'].id, c.body['event'].id);
    t.ok(a.body['event'].id.length > 0);
  });

  t.test('ids are scoped to their run', async (t) => {
    const r = await b.req('POST', '/runs/idem-other/events', ev({ id: 'e1', message: 'different run' }));
    t.equal(r.status, 201);
    t.equal(r.body['seq'], 0);
  });

  t.test('concurrent repeats of one id append exactly once', async (t) => {
    const answers = await Promise.all(
      Array.from({ length: 12 }, () =>
        b.req('POST', `/runs/${RUN}/events`, ev({ id: 'burst', message: 'b' })),
      ),
    );
    t.equal(answers.filter((a) => a.status === 201).length, 1, 'one append');
    t.equal(
      answers.filter((a) => a.status === 200 && a.body['duplicate'] === true).length,
      11,
      'the rest are duplicates',
    );
    t.equal(new Set(answers.map((a) => a.body['seq'])).size, 1, 'all answers name the same seq');
    t.equal(
      records(await b.journal(RUN)).filter((r) => r.event.id === 'burst').length,
      1,
      'one record in the journal',
    );
  });

  t.test('ids that share an index fingerprint are told apart by the stored record', async (t) => {
    // Every id of the run on one fingerprint: the index offers every position as a candidate, and
    // only the id in the journal record at that position may decide a repeat.
    const loaded = await b.ctx.store.load(RUN);
    if (loaded.kind !== 'open') throw new Error('the run is not open');
    const colliding = new IdIndex(() => 1);
    for (const r of records(await b.journal(RUN))) colliding.add(r.event.id, r.seq);
    loaded.run.ids = colliding;
    b.ctx.store.release(loaded.run);

    const fresh = await b.req('POST', `/runs/${RUN}/events`, ev({ id: 'shares-a-fingerprint' }));
    t.equal(fresh.status, 201, 'a new id is appended, not taken for a repeat');
    const dup = await b.req('POST', `/runs/${RUN}/events`, ev({ id: 'e1', message: 'hello' }));
    t.equal(dup.status, 200);
    t.equal(dup.body['seq'], 0, 'a repeat finds its own record among the candidates');
    const again = await b.req('POST', `/runs/${RUN}/events`, ev({ id: 'shares-a-fingerprint' }));
    t.equal(again.status, 200);
    t.equal(again.body['seq'], fresh.body['seq']);
    await expectRejected(
      t,
      b,
      RUN,
      () => b.req('POST', `/runs/${RUN}/events`, ev({ id: 'shares-a-fingerprint', message: 'other' })),
      409,
      'event_id_conflict',
    );
  });

  t.test('ids survive a restart', async (t) => {
    await b.close();
    const b2 = await startTestBridge(b.t);
    t.teardown(() => b2.close());
    const before = await b2.journal(RUN);
    const dup = await b2.req('POST', `/runs/${RUN}/events`, ev({ id: 'e1', message: 'hello' }));
    t.equal(dup.status, 200);
    t.equal(dup.body['duplicate'], true);
    await expectRejected(
      t,
      b2,
      RUN,
      () => b2.req('POST', `/runs/${RUN}/events`, ev({ id: 'e2', message: 'changed' })),
      409,
      'event_id_conflict',
    );
    t.ok((await b2.journal(RUN)).equals(before), 'journal bytes unchanged');
  });
});
