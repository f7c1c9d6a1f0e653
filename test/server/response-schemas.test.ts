import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { TSchema } from '#typebox';
import { Compile } from '#typebox/compile';
import { EventAccepted, EventDuplicate } from '../../src/server/routes/events.js';
import { CreatedRun, RunRead, RunsPage } from '../../src/server/routes/runs.js';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';
import { complete, driveToReady } from '../helpers/complete-run.js';

/**
 * The answers the bridge sends are the ones its route schemas (and so docs/openapi.json) describe.
 * The serializer is plain JSON.stringify, so nothing else holds the two together: every 2xx body
 * here, in each state a run can be read in, is checked against the schema its route declares.
 */
function conforms(t: Test, schema: TSchema, body: unknown, what: string): void {
  const check = Compile(schema);
  const errors = check.Check(body) ? [] : [...check.Errors(body)].slice(0, 5);
  t.same(errors, [], `${what} matches its route's response schema`);
}

t.test('2xx answers match their route schemas', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));

  const created = await b.req('POST', '/runs', { id: 's1', title: 'schemas' });
  t.equal(created.status, 201);
  conforms(t, CreatedRun, created.body, 'POST /runs 201');
  const repeat = await b.req('POST', '/runs', { id: 's1' });
  t.equal(repeat.status, 200);
  conforms(t, CreatedRun, repeat.body, 'POST /runs 200');

  const event = ev({ id: 'e1' });
  const accepted = await b.req('POST', '/runs/s1/events', event);
  t.equal(accepted.status, 201);
  conforms(t, EventAccepted, accepted.body, 'POST /runs/:id/events 201');
  const duplicate = await b.req('POST', '/runs/s1/events', event);
  t.equal(duplicate.status, 200);
  conforms(t, EventDuplicate, duplicate.body, 'POST /runs/:id/events 200 (repeat)');
  const approval = ev({
    type: 'approval.requested',
    nodeId: 'redzone',
    status: 'needs_approval',
    approvalOwner: 'lead',
    approvalScope: 'deploy',
  });
  conforms(t, EventAccepted, (await b.req('POST', '/runs/s1/events', approval)).body, 'an approval request');

  conforms(t, RunRead, (await b.req('GET', '/runs/s1')).body, 'GET /runs/:id of a running run');
  conforms(t, RunRead, (await b.req('GET', '/runs/s1?eventCursor=99')).body, 'GET /runs/:id past the end');
  conforms(t, RunsPage, (await b.req('GET', '/runs')).body, 'GET /runs');

  await driveToReady(b, 's2');
  t.equal((await complete(b, 's2')).status, 201);
  conforms(t, RunRead, (await b.req('GET', '/runs/s2')).body, 'GET /runs/:id of a completed run');

  // Drift after completion: the read quarantines the run and answers the quarantined shape.
  await writeFile(join(b.t.artifactRoot, 'handoff/final.md'), 'edited after completion\n');
  const quarantined = await b.req('GET', '/runs/s2');
  t.equal(quarantined.body['run'].status, 'quarantined');
  conforms(t, RunRead, quarantined.body, 'GET /runs/:id of a quarantined run');
  const list = await b.req('GET', '/runs');
  t.ok(list.body['runs'].some((r: { status: string }) => r.status === 'quarantined'));
  conforms(t, RunsPage, list.body, 'GET /runs with a quarantined run');
});
