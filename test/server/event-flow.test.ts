import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';

t.test('a run is created by its first event and events append in order', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const first = await b.req('POST', '/runs/run-1/events', ev({ artifactRoot: b.t.artifactRoot }));
  t.equal(first.status, 201, JSON.stringify(first.body));
  t.equal(first.body.seq, 0);
  t.equal(first.body.run.status, 'running');
  await mkdir(join(b.t.artifactRoot, 'run'), { recursive: true });
  await writeFile(join(b.t.artifactRoot, 'run', 'intake.json'), '{"ok":true}');
  const art = await b.req(
    'POST',
    '/runs/run-1/events',
    ev({ type: 'artifact.written', artifact: 'run/intake.json' }),
  );
  t.equal(art.status, 201, JSON.stringify(art.body));
  t.match(art.body.event.claim, { path: 'run/intake.json', size: 11 });
  const got = await b.req('GET', '/runs/run-1');
  t.equal(got.status, 200);
  t.same(Object.keys(got.body).sort(), ['ok', 'run'], 'CONTRACT 4: the body is exactly {ok, run}');
  t.ok(Array.isArray(got.body.run.events), 'the events sit inside run');
  t.type(got.body.run.eventPage, 'object', 'and so does the event page');
  t.equal(got.body.run.events.length, 2);
  t.equal(got.body.run.eventPage.total, 2);
  t.equal(got.headers.get('x-harness-page-total'), '2');
  const list = await b.req('GET', '/runs');
  t.equal(list.body.runs.length, 1);
  t.equal(list.body.runs[0].eventCount, 2);
});

t.test(
  'an event without id or ts is stamped by the bridge: a fresh UUID and the time it arrived',
  async (t) => {
    const b = await startTestBridge();
    t.teardown(() => cleanup(b));
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    const stamps: string[] = [];
    for (let i = 0; i < 3; i++) {
      const before = new Date().toISOString();
      const res = await b.req('POST', '/runs/run-1/events', ev());
      const after = new Date().toISOString();
      t.equal(res.status, 201, JSON.stringify(res.body));
      t.match(res.body.event.id, uuid);
      t.ok(
        res.body.event.ts >= before && res.body.event.ts <= after,
        `${res.body.event.ts} is when it arrived`,
      );
      stamps.push(res.body.event.ts);
      await new Promise((r) => setTimeout(r, 5));
    }
    t.equal(new Set(stamps).size, 3, 'events milliseconds apart get their own stamps');
    const got = await b.req('GET', '/runs/run-1');
    t.same(
      got.body.run.events.map((e: { ts: string }) => e.ts),
      stamps,
      'the journal holds the stamps the answers gave',
    );
    const given = await b.req(
      'POST',
      '/runs/run-1/events',
      ev({ id: 'mine', ts: '2020-01-01T00:00:00.000Z' }),
    );
    t.match(given.body.event, { id: 'mine', ts: '2020-01-01T00:00:00.000Z' }, 'supplied values are kept');
  },
);
