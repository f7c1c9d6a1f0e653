import t from 'tap';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';

/**
 * SPEC Endpoints 2-4 and CONTRACT 4: GET /runs pages event-free summaries in creation order;
 * GET /runs/:id pages events in journal order, newest page by default; both send the decimal
 * x-harness-page-* headers and x-harness-next-cursor only while another page exists.
 */
const pageHeaders = (h: Headers) => ({
  offset: h.get('x-harness-page-offset'),
  limit: h.get('x-harness-page-limit'),
  returned: h.get('x-harness-page-returned'),
  total: h.get('x-harness-page-total'),
  next: h.get('x-harness-next-cursor'),
});

t.test('GET /runs', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const ids = Array.from({ length: 27 }, (_, i) => `run-${String(i).padStart(2, '0')}`);
  // Sequential creation fixes the order; one event on the first gives it a body to leave out.
  for (const id of ids) t.equal((await b.req('POST', '/runs', { id, title: `T ${id}` })).status, 201);
  t.equal((await b.req('POST', '/runs/run-00/events', ev({ message: 'body text' }))).status, 201);

  t.test('default limit 25, creation order, next cursor', async (t) => {
    const r = await b.req('GET', '/runs');
    t.equal(r.status, 200);
    t.same(
      r.body['runs'].map((s: any) => s.id),
      ids.slice(0, 25),
    );
    t.same(pageHeaders(r.headers), { offset: '0', limit: '25', returned: '25', total: '27', next: '25' });
  });

  t.test('following the cursor to the last page', async (t) => {
    const r = await b.req('GET', '/runs?cursor=25');
    t.same(
      r.body['runs'].map((s: any) => s.id),
      ids.slice(25),
    );
    t.same(pageHeaders(r.headers), { offset: '25', limit: '25', returned: '2', total: '27', next: null });
  });

  t.test('explicit limits and a cursor past the end', async (t) => {
    const r = await b.req('GET', '/runs?limit=2&cursor=3');
    t.same(
      r.body['runs'].map((s: any) => s.id),
      ['run-03', 'run-04'],
    );
    t.same(pageHeaders(r.headers), { offset: '3', limit: '2', returned: '2', total: '27', next: '5' });
    const all = await b.req('GET', '/runs?limit=50');
    t.equal(all.body['runs'].length, 27);
    t.equal(all.headers.get('x-harness-next-cursor'), null);
    const past = await b.req('GET', '/runs?cursor=100');
    t.same(past.body['runs'], []);
    t.same(pageHeaders(past.headers), { offset: '100', limit: '25', returned: '0', total: '27', next: null });
  });

  t.test('summaries carry no event bodies', async (t) => {
    const r = await b.req('GET', '/runs?limit=1');
    const s = r.body['runs'][0];
    t.same(Object.keys(s).sort(), [
      'commissioned',
      'createdAt',
      'currentNodeId',
      'eventCount',
      'eventsTruncated',
      'id',
      'pendingApprovals',
      'reverificationDue',
      'runMode',
      'status',
      'title',
      'updatedAt',
    ]);
    t.equal(s.eventCount, 1);
    t.equal(s.eventsTruncated, true, 'the summary does not carry the event');
    t.notOk(JSON.stringify(r.body).includes('body text'));
  });
});

t.test('GET /runs/:id event pages', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const total = 120;
  for (let i = 0; i < total; i += 20) {
    await Promise.all(
      Array.from({ length: 20 }, (_, j) => b.req('POST', '/runs/p/events', ev({ id: `e${i + j}` }))),
    );
  }
  const seqs = (r: { body: Record<string, any> }) => r.body['run'].events.map((e: any) => e.seq);
  const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

  t.test('no cursor: the newest page of the default 100', async (t) => {
    const r = await b.req('GET', '/runs/p');
    t.same(seqs(r), range(20, 120));
    t.same(r.body['run'].eventPage, {
      offset: 20,
      limit: 100,
      returned: 100,
      total,
      previousCursor: '0',
      nextCursor: null,
      truncated: true,
      byteLimited: false,
    });
    t.same(pageHeaders(r.headers), { offset: '20', limit: '100', returned: '100', total: '120', next: null });
    t.equal(r.body['run'].eventsTruncated, true);
  });

  t.test('newest page with a small limit', async (t) => {
    const r = await b.req('GET', '/runs/p?eventLimit=3');
    t.same(seqs(r), [117, 118, 119]);
    t.equal(r.body['run'].eventPage.previousCursor, '114');
  });

  t.test('walking forward from cursor 0', async (t) => {
    const r = await b.req('GET', '/runs/p?eventCursor=0&eventLimit=50');
    t.same(seqs(r), range(0, 50));
    t.match(r.body['run'].eventPage, { offset: 0, returned: 50, previousCursor: null, nextCursor: '50' });
    t.same(pageHeaders(r.headers), { offset: '0', limit: '50', returned: '50', total: '120', next: '50' });
    const r2 = await b.req('GET', '/runs/p?eventCursor=50&eventLimit=50');
    t.same(seqs(r2), range(50, 100));
    t.equal(r2.body['run'].eventPage.previousCursor, '0');
    t.equal(r2.body['run'].eventPage.nextCursor, '100');
    const r3 = await b.req('GET', '/runs/p?eventCursor=100&eventLimit=50');
    t.same(seqs(r3), range(100, 120));
    t.match(r3.body['run'].eventPage, { returned: 20, nextCursor: null });
    t.equal(r3.body['run'].eventPage.previousCursor, '50');
    t.equal(r3.headers.get('x-harness-next-cursor'), null);
  });

  t.test('a cursor less than a page from the start: the previous page starts at 0', async (t) => {
    const r = await b.req('GET', '/runs/p?eventCursor=30&eventLimit=50');
    t.same(seqs(r), range(30, 80));
    t.equal(r.body['run'].eventPage.previousCursor, '0', 'max(0, offset - limit), never negative');
    t.equal(r.body['run'].eventPage.nextCursor, '80');
    // One event in, there is still a previous page: the first event.
    const one = await b.req('GET', '/runs/p?eventCursor=1&eventLimit=50');
    t.same(seqs(one), range(1, 51));
    t.equal(one.body['run'].eventPage.previousCursor, '0', 'a page from offset 1 has a previous page');
  });

  t.test('a cursor at or past the end returns an empty page', async (t) => {
    for (const c of [120, 500]) {
      const r = await b.req('GET', `/runs/p?eventCursor=${c}`);
      t.equal(r.status, 200);
      t.same(r.body['run'].events, []);
      t.equal(r.body['run'].eventPage.offset, 120, 'the offset is clamped to the end');
      t.equal(r.body['run'].eventPage.previousCursor, '20', 'so the previous page is the newest one');
      t.equal(r.body['run'].eventPage.nextCursor, null);
      t.equal(r.headers.get('x-harness-page-returned'), '0');
    }
  });

  t.test('a run with every event on one page is not truncated', async (t) => {
    await b.req('POST', '/runs/small/events', ev());
    const r = await b.req('GET', '/runs/small');
    t.match(r.body['run'].eventPage, {
      offset: 0,
      returned: 1,
      total: 1,
      truncated: false,
      previousCursor: null,
    });
    t.equal(r.body['run'].eventsTruncated, false);
  });

  t.test('unknown run: 404 run_not_found', async (t) => {
    const r = await b.req('GET', '/runs/nope');
    t.equal(r.status, 404);
    t.equal(r.body['error'], 'run_not_found');
  });
});

// Measured in UTF-8 bytes: three-byte characters take three times the room their count says.
for (const [text, run, big] of [
  ['ASCII', 'fat', 'x'.repeat(3500)],
  ['three-byte', 'fat3', '€'.repeat(1100)],
] as const) {
  t.test(`a page of ${text} text that would pass 1 MiB is cut and marked byteLimited`, async (t) => {
    const b = await startTestBridge();
    t.teardown(() => cleanup(b));
    const fat = (i: number) =>
      ev({
        id: `fat${i}`,
        message: big,
        skipReason: big,
        failureReason: big,
        recoveryPath: big,
      });
    for (let i = 0; i < 100; i += 25) {
      const rs = await Promise.all(
        Array.from({ length: 25 }, (_, j) => b.req('POST', `/runs/${run}/events`, fat(i + j))),
      );
      t.ok(
        rs.every((r) => r.status === 201),
        'accepted',
      );
    }
    const res = await fetch(`${b.url}/runs/${run}?eventCursor=0&eventLimit=100`, {
      headers: { 'x-harness-bridge-token': b.t.env['HARNESS_BRIDGE_ACCESS_TOKEN']! },
    });
    const text = await res.text();
    t.ok(Buffer.byteLength(text) <= 1024 * 1024, `body ${Buffer.byteLength(text)} bytes is under 1 MiB`);
    const body = JSON.parse(text);
    const page = body.run.eventPage;
    t.equal(page.byteLimited, true);
    t.ok(page.returned > 0 && page.returned < 100, `returned ${page.returned}`);
    t.equal(body.run.events.length, page.returned);
    t.equal(page.nextCursor, String(page.returned), 'the next page starts where this one was cut');
    t.equal(res.headers.get('x-harness-next-cursor'), String(page.returned));

    // The newest page (no cursor) is cut at its old end: its last event is the run's last.
    const newest = await b.req('GET', `/runs/${run}`);
    const np = newest.body['run'].eventPage;
    const ids = newest.body['run'].events.map((e: any) => e.id);
    t.equal(np.byteLimited, true);
    t.ok(np.returned > 0 && np.returned < 100, `returned ${np.returned}`);
    t.equal(ids.length, np.returned);
    t.equal(ids.at(-1), 'fat99', 'the newest event is on the newest page');
    t.same(
      ids,
      Array.from({ length: np.returned }, (_, i) => `fat${100 - np.returned + i}`),
      'the newest events, in journal order',
    );
    t.equal(np.offset, 100 - np.returned, 'the offset is where the kept events begin');
    t.equal(np.nextCursor, null);
    t.equal(np.previousCursor, String(Math.max(0, np.offset - 100)));
    t.equal(newest.headers.get('x-harness-page-offset'), String(np.offset));
  });
}

t.test('creation order and its offsets survive a restart', async (t) => {
  const first = await startTestBridge();
  // Created one after another within milliseconds, in the reverse of their IDs' order; then a
  // burst of creates that overlap.
  const sequential = ['z-run', 'y-run', 'x-run', 'w-run', 'v-run'];
  for (const id of sequential) t.equal((await first.req('POST', '/runs', { id })).status, 201);
  const burst = Array.from({ length: 12 }, (_, i) => `burst-${String(i).padStart(2, '0')}`);
  await Promise.all(burst.map((id) => first.req('POST', `/runs/${id}/events`, ev())));
  const listed = async (b: typeof first) => (await b.req('GET', '/runs?limit=50')).body['runs'];
  const before = await listed(first);
  t.same(
    before.slice(0, sequential.length).map((s: any) => s.id),
    sequential,
    'creation order, not ID order',
  );
  const times = before.map((s: any) => s.createdAt);
  t.same(times, [...new Set(times)].sort(), 'no two runs share a creation time, and it orders them');
  await first.close();
  const second = await startTestBridge(first.t);
  t.teardown(() => cleanup(second));
  t.same(await listed(second), before, 'the same runs at the same offsets after a restart');
});
