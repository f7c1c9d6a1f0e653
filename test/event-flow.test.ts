import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { cleanup, ev, startTestBridge } from './helpers/bridge.js';

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
  t.equal(got.body.events.length, 2);
  t.equal(got.body.eventPage.total, 2);
  t.equal(got.headers.get('x-harness-page-total'), '2');
  const list = await b.req('GET', '/runs');
  t.equal(list.body.runs.length, 1);
  t.equal(list.body.runs[0].eventCount, 2);
});
