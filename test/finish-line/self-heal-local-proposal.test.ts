import t, { type Test } from 'tap';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';
import { expectRejected, records, writeArtifact } from '../helpers/expect.js';

/**
 * SPEC field table and completion rule 4: a self_heal.pr_proposed's selfHealPrUrl is a pull request
 * URL or the local proposal reference `self_heal/pr.json`. The local reference is verified and
 * claimed at append exactly like `artifact: self_heal/pr.json`; both names given must agree, and
 * any other selfHealPrUrl is refused with nothing stored.
 */
t.test('self-heal local proposal reference', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const root = b.t.artifactRoot;
  const RUN = 'slp';
  t.equal((await b.req('POST', `/runs/${RUN}/events`, ev({ artifactRoot: root }))).status, 201);
  await writeArtifact(root, 'self_heal/pr.json', '{"schema":"harness.self-heal-proposal.v1"}');
  await writeArtifact(root, 'self_heal/other.json', '{}');
  const proposed = (over: Record<string, unknown>) =>
    ev({ type: 'self_heal.pr_proposed', nodeId: 'self-heal', ...over });
  const post = (body: unknown) => b.req('POST', `/runs/${RUN}/events`, body);
  const refused = (t: Test, body: unknown, status = 400, code = 'event_contract_violation', run = RUN) =>
    expectRejected(t, b, run, () => b.req('POST', `/runs/${run}/events`, body), status, code);

  t.test('selfHealPrUrl self_heal/pr.json is verified and claimed', async (t) => {
    const r = await post(proposed({ selfHealPrUrl: 'self_heal/pr.json' }));
    t.equal(r.status, 201, JSON.stringify(r.body));
    t.match(r.body['event'].claim, { path: 'self_heal/pr.json', size: 42 });
    const rec = records(await b.journal(RUN)).at(-1)!;
    t.equal(rec.claim?.path, 'self_heal/pr.json', 'the journal holds the claim');
    const run = (await b.req('GET', `/runs/${RUN}`)).body['run'];
    t.match(run.selfHeal, { resolved: true, prUrl: null, artifact: 'self_heal/pr.json' });
    t.ok(
      run.artifacts.some((a: { path: string }) => a.path === 'self_heal/pr.json'),
      'the proposal is a verified artifact of the run',
    );
  });

  t.test('artifact and selfHealPrUrl naming the same proposal are accepted', async (t) => {
    const r = await post(proposed({ selfHealPrUrl: 'self_heal/pr.json', artifact: 'self_heal/pr.json' }));
    t.equal(r.status, 201, JSON.stringify(r.body));
    t.equal(r.body['event'].claim?.path, 'self_heal/pr.json');
  });

  t.test('artifact and selfHealPrUrl naming different proposals are refused', async (t) => {
    await refused(t, proposed({ selfHealPrUrl: 'self_heal/pr.json', artifact: 'self_heal/other.json' }));
  });

  t.test('any other non-URL selfHealPrUrl is refused, with or without artifact', async (t) => {
    for (const url of [
      'self_heal/other.json',
      './self_heal/pr.json',
      'self_heal/pr.json ',
      'see the patch',
      '',
    ]) {
      for (const over of [{}, { artifact: 'self_heal/pr.json' }]) {
        await refused(t, proposed({ selfHealPrUrl: url, ...over }));
      }
    }
  });

  t.test('pr_opened still needs a real pull request URL', async (t) => {
    await expectRejected(
      t,
      b,
      RUN,
      () =>
        post(ev({ type: 'self_heal.pr_opened', nodeId: 'self-heal', selfHealPrUrl: 'self_heal/pr.json' })),
      400,
      'event_contract_violation',
    );
  });

  t.test('the local reference without an artifact root is refused', async (t) => {
    await refused(
      t,
      proposed({ selfHealPrUrl: 'self_heal/pr.json' }),
      409,
      'event_state_violation',
      'slp-noroot',
    );
  });
});
