import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { commissionedRun, completed } from './helpers/commissioned-run.js';

/**
 * Issue 29 item 1: a commissioned run whose route, trust-store entry, roster, packet and node
 * decisions were all made by the writers (`harness route write`, `review enroll` with the git
 * commands and pin it prints, the roster example of `review sign --help`, `packet write`, `node
 * pass`) completes through the real bridge and its real finish-line gate.
 */
t.test('a run whose documents the writers made completes', async (t) => {
  const c = await commissionedRun(t, { writers: true });
  const packet = JSON.parse(await readFile(join(c.f.root, 'run/packet.json'), 'utf8'));
  t.equal(packet.subject.commit, c.head, 'the packet binds the post-fix commit the proof ran at');
  t.equal(packet.roles.independentReviewer.actorId, 'alice', 'and the roster the reviewer signed');
  t.equal(
    (await c.f.git('show', 'HEAD:controls/review-trust.v1.json')).includes(c.keyId),
    true,
    "enroll's git commands committed the key",
  );
  await completed(t, c);
  const got = await c.b.req('GET', `/runs/${c.f.runId}`);
  const nodes: { id: string; state: string; artifactVerified: boolean; required: boolean }[] =
    got.body.run.nodes;
  t.same(
    nodes.filter((n) => n.required).map((n) => [n.id, n.state, n.artifactVerified]),
    [
      ['route', 'passed', true],
      ['production-readiness', 'passed', true],
      ['prove', 'passed', true],
      ['handoff', 'passed', true],
    ],
    'node pass recorded each artifact and passed its node',
  );
});
