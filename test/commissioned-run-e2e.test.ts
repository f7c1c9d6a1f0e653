import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import {
  commissionedRun,
  completed,
  driveAndComplete,
  expectQuarantined,
} from './helpers/commissioned-run.js';

/**
 * Issue 3 item 6: a commissioned run end to end through the real HTTP bridge and the real
 * finish-line gate (validator children, as `harness bridge` wires it), with evidence made by the
 * real tools (see helpers/commissioned-run.ts). It completes; drift afterwards quarantines it; a
 * review signed by a revoked key is refused over HTTP naming the rule.
 */
t.test('a commissioned run completes, then one changed byte quarantines it', async (t) => {
  const c = await commissionedRun(t);
  await completed(t, c);
  t.equal((await c.b.req('GET', `/runs/${c.f.runId}`)).body.run.status, 'completed', 'a re-read agrees');
  const path = join(c.f.root, 'production/layer-assessment.json');
  const text = await readFile(path, 'utf8');
  t.ok(text.includes('team-a'));
  await writeFile(path, text.replace('team-a', 'team-b'));
  await expectQuarantined(t, c, /^artifact production\/layer-assessment\.json changed after completion$/);
});

t.test('the gate refuses a review signed by a revoked key over HTTP, naming the rule', async (t) => {
  const c = await commissionedRun(t, { keyStatus: 'revoked' });
  const refused = await driveAndComplete(c);
  t.equal(refused.status, 409, JSON.stringify(refused.body));
  t.equal(refused.body.error, 'finish_line_blocked');
  const problems: string[] = refused.body.problems;
  t.ok(problems.includes(`review-signature: signing key ${c.keyId} is revoked`), JSON.stringify(problems));
  t.ok(
    problems.every((p) => p.startsWith('review-signature: ')),
    'only the revoked key fails the gate',
  );
  const got = await c.b.req('GET', `/runs/${c.f.runId}`);
  t.equal(got.body.run.status, 'blocked');
  const events: { type: string; message: string }[] = got.body.run.events;
  t.equal(got.body.run.eventPage.total, events.length, 'every event is on the page');
  t.same(
    events.filter((e) => e.type === 'run.completed' || e.type === 'run.blocked').map((e) => e.type),
    ['run.blocked'],
    'one run.blocked, and the completion is not stored',
  );
  const last = events.at(-1)!;
  t.match(last, { type: 'run.blocked', actor: 'system' });
  t.match(last.message, `review-signature: signing key ${c.keyId} is revoked`);
});
