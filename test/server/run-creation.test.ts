import { mkdir, readdir, rename, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';
import { allEvents, assertEnvelope, expectRejected, writeArtifact } from '../helpers/expect.js';

/**
 * CONTRACT 4 POST /runs and SPEC Endpoints 1 / Errors 5: first create 201; an identical (or
 * narrower) repeat 200 with the stored run; a differing field 409 run_already_exists naming it;
 * unknown and forbidden fields 400; root and adapter rules.
 */
t.test('POST /runs', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const full = {
    id: 'rc1',
    title: 'Fix login',
    task: 'T-1',
    repo: 'acme/app',
    branch: 'main',
    lane: 'fast',
    agent: 'runtime-a',
    risk: 'low',
    runMode: 'live',
    eventSource: 'api',
    artifactRoot: b.t.artifactRoot,
  };

  t.test('first create: 201 created:true with the run', async (t) => {
    const r = await b.req('POST', '/runs', full);
    t.equal(r.status, 201, JSON.stringify(r.body));
    t.equal(r.body['ok'], true);
    t.equal(r.body['created'], true);
    t.equal(r.body['run'].id, 'rc1');
    t.equal(r.body['run'].title, 'Fix login');
    t.equal(r.body['run'].runMode, 'live');
    t.equal(r.body['run'].artifactRootSet, true);
    t.same(r.body['run'].metadata, {
      title: 'Fix login',
      task: 'T-1',
      repo: 'acme/app',
      branch: 'main',
      lane: 'fast',
      agent: 'runtime-a',
      risk: 'low',
    });
    t.notOk(JSON.stringify(r.body).includes(b.t.artifactRoot), 'the absolute root is not returned');
    // A run without events is not ready to complete, and the preview says why.
    const preview = r.body['run'].completionPreview;
    t.equal(preview.ready, false);
    t.ok(preview.problems.includes('required node prove is pending, not passed'), JSON.stringify(preview));
  });

  t.test('identical repeat: 200 created:false, nothing changes', async (t) => {
    const before = await readdir(b.t.dataDir);
    const r = await b.req('POST', '/runs', full);
    t.equal(r.status, 200);
    t.equal(r.body['created'], false);
    t.equal(r.body['run'].title, 'Fix login');
    t.same(await readdir(b.t.dataDir), before);
  });

  t.test('a repeat that omits fields never conflicts', async (t) => {
    for (const body of [
      { id: 'rc1' },
      { id: 'rc1', title: 'Fix login' },
      { id: 'rc1', artifactRoot: b.t.artifactRoot },
    ]) {
      const r = await b.req('POST', '/runs', body);
      t.equal(r.status, 200, JSON.stringify(body));
      t.equal(r.body['created'], false);
    }
  });

  t.test('a differing field: 409 run_already_exists naming each field', async (t) => {
    const other = join(b.t.dir, 'other-root');
    await mkdir(other, { recursive: true });
    const cases: [Record<string, unknown>, string[]][] = [
      [{ title: 'Other' }, ['title']],
      [{ task: 'T-2', risk: 'high' }, ['task', 'risk']],
      [{ runMode: 'replay' }, ['runMode']],
      [{ eventSource: 'mcp' }, ['eventSource']],
      [{ artifactRoot: other }, ['artifactRoot']],
    ];
    for (const [over, fields] of cases) {
      const r = await expectRejected(
        t,
        b,
        'rc1',
        () => b.req('POST', '/runs', { id: 'rc1', ...over }),
        409,
        'run_already_exists',
      );
      for (const f of fields) {
        t.ok(
          r.body['problems'].some((p: string) => p.startsWith(`${f} `)),
          `names ${f}: ${JSON.stringify(r.body['problems'])}`,
        );
      }
      t.equal(r.body['problems'].length, fields.length);
    }
    const after = await b.req('GET', '/runs/rc1');
    t.equal(after.body['run'].title, 'Fix login', 'the stored run is unchanged');
  });

  t.test('unknown and forbidden fields: 400, nothing created', async (t) => {
    const cases: [Record<string, unknown>, string][] = [
      [{ status: 'completed' }, 'run_creation_contract_violation'],
      [{ color: 'red' }, 'run_creation_contract_violation'],
      [{ events: [] }, 'run_creation_contract_violation'],
      [{ commissioned: true }, 'run_creation_contract_violation'],
      [{ trustPin: 'a'.repeat(64) }, 'run_creation_contract_violation'],
      [{ humanToken: 'x' }, 'client_supplied_human_token_rejected'],
      [{ humanApprovalToken: 'x' }, 'client_supplied_human_token_rejected'],
      [{ auth: 'x' }, 'client_supplied_human_token_rejected'],
      [{ title: 5 }, 'run_creation_contract_violation'],
      [{ runMode: 'dry' }, 'run_creation_contract_violation'],
      // The seed's mode/source table holds for POST /runs as for events.
      [{ runMode: 'live', eventSource: 'static-blueprint' }, 'run_creation_contract_violation'],
      [{ runMode: 'blueprint', eventSource: 'bridge' }, 'run_creation_contract_violation'],
      [{ runMode: 'replay', eventSource: 'api' }, 'run_creation_contract_violation'],
    ];
    for (const [over, code] of cases) {
      await expectRejected(
        t,
        b,
        'rc-bad',
        () => b.req('POST', '/runs', { id: 'rc-bad', ...over }),
        400,
        code,
      );
      t.equal((await b.req('GET', '/runs/rc-bad')).status, 404, `${JSON.stringify(over)} created nothing`);
    }
    for (const body of [{}, { id: 7 }, { id: null }, { title: 'no id' }, [], 'null']) {
      const r = await b.req('POST', '/runs', body);
      t.equal(r.status, 400, JSON.stringify(body));
      assertEnvelope(t, r.body, 'run_creation_contract_violation');
    }
  });

  t.test('a non-canonical string id is invalid_run_id, as in a path, and stores nothing', async (t) => {
    const runsBefore = (await b.req('GET', '/runs?limit=50')).headers.get('x-harness-page-total');
    const dirBefore = (await readdir(b.t.dataDir)).sort();
    // A non-canonical ID names no run directory, so what it must not have stored is any entry of
    // the data directory (a run mapped onto another ID would add or change one).
    const refused = async (body: Record<string, unknown>, label: string) => {
      const r = await b.req('POST', '/runs', body);
      t.equal(r.status, 400, label);
      assertEnvelope(t, r.body, 'invalid_run_id');
      t.same(
        (await readdir(b.t.dataDir)).sort(),
        dirBefore,
        `${label}: the data directory lists the same entries`,
      );
      return r;
    };
    for (const id of ['', '-x', '.x', '_x', 'a'.repeat(129), 'a b', 'a/b', '..', 'café', 'a\u0000b', 'a:b']) {
      const r = await refused({ id, title: 'x', artifactRoot: b.t.artifactRoot }, JSON.stringify(id));
      if (id.length > 1) t.notOk(JSON.stringify(r.body).includes(id), 'the ID is not echoed');
    }
    // Other faults in the same body do not hide the run ID's.
    await refused({ id: '-x', status: 'completed' }, 'with a forbidden field');
    t.equal(
      (await b.req('GET', '/runs?limit=50')).headers.get('x-harness-page-total'),
      runsBefore,
      'no run was created',
    );
  });

  t.test('an eventSource alone sets the one mode that admits it', async (t) => {
    // The seed's mode/source table gives each source one mode: a run created with a blueprint
    // source is a blueprint run, and a live event would pair it with a source its mode forbids.
    const r = await b.req('POST', '/runs', { id: 'rc-src', eventSource: 'static-blueprint' });
    t.equal(r.status, 201);
    t.equal(r.body['run'].runMode, 'blueprint');
    await expectRejected(
      t,
      b,
      'rc-src',
      () => b.req('POST', '/runs/rc-src/events', ev({ runMode: 'live', eventSource: 'api' })),
      409,
      'event_state_violation',
    );
    await expectRejected(
      t,
      b,
      'rc-src',
      () =>
        b.req(
          'POST',
          '/runs/rc-src/events',
          ev({ type: 'run.mode_set', runMode: 'replay', eventSource: 'database' }),
        ),
      409,
      'event_state_violation',
    );
    await expectRejected(
      t,
      b,
      'rc-src',
      () => b.req('POST', '/runs', { id: 'rc-src', runMode: 'live' }),
      409,
      'run_already_exists',
    );
    t.equal((await b.req('POST', '/runs', { id: 'rc-src', runMode: 'blueprint' })).status, 200);
    const first = ev({ runMode: 'blueprint', eventSource: 'static-blueprint' });
    t.equal((await b.req('POST', '/runs/rc-src/events', first)).status, 201);
  });

  t.test('a refused create on an existing run changes nothing', async (t) => {
    await expectRejected(
      t,
      b,
      'rc1',
      () => b.req('POST', '/runs', { id: 'rc1', title: 'Fix login', status: 'completed' }),
      400,
      'run_creation_contract_violation',
    );
  });

  t.test('IDs are exact: no case folding or mapping', async (t) => {
    t.equal((await b.req('POST', '/runs', { id: 'RC1', title: 'Other' })).status, 201);
    t.equal((await b.req('GET', '/runs/rc1')).body['run'].title, 'Fix login');
    t.equal((await b.req('GET', '/runs/RC1')).body['run'].title, 'Other');
  });
});

t.test('artifactRoot and adapter on creation', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));

  t.test('a root that is relative, missing or a file: 400 artifact_verification_failed', async (t) => {
    const file = await writeArtifact(b.t.dir, 'plain-file', 'x');
    for (const root of ['relative/root', join(b.t.dir, 'does-not-exist'), file]) {
      await expectRejected(
        t,
        b,
        'ar',
        () => b.req('POST', '/runs', { id: 'ar', artifactRoot: root }),
        400,
        'artifact_verification_failed',
      );
      t.equal((await b.req('GET', '/runs/ar')).status, 404);
    }
  });

  t.test('a create without root may seal one later, before any event; then it is fixed', async (t) => {
    t.equal((await b.req('POST', '/runs', { id: 'late' })).status, 201);
    const seal = await b.req('POST', '/runs', { id: 'late', artifactRoot: b.t.artifactRoot });
    t.equal(seal.status, 200, JSON.stringify(seal.body));
    t.equal(seal.body['run'].artifactRootSet, true);
    const other = join(b.t.dir, 'other');
    await mkdir(other);
    await expectRejected(
      t,
      b,
      'late',
      () => b.req('POST', '/runs', { id: 'late', artifactRoot: other }),
      409,
      'run_already_exists',
    );
    // A root that no longer resolves is not the sealed one either.
    const gone = join(b.t.dir, 'gone-root');
    const missing = () => b.req('POST', '/runs', { id: 'late', artifactRoot: gone });
    const r = await expectRejected(t, b, 'late', missing, 409, 'run_already_exists');
    t.match(r.body['problems'], [/^artifactRoot differs/]);
  });

  t.test('a create that set only the root lets the first event add the adapter, once', async (t) => {
    const adapter = join(b.t.repo, 'late-adapter.json');
    const other = join(b.t.repo, 'late-other-adapter.json');
    await writeFile(adapter, JSON.stringify({ runtime: { requiredNodes: ['intake'] } }));
    await writeFile(other, JSON.stringify({ runtime: { requiredNodes: ['route'] } }));
    const made = await b.req('POST', '/runs', { id: 'lateadapter', artifactRoot: b.t.artifactRoot });
    t.equal(made.status, 201);
    t.equal(made.body['run'].adapter, null);
    const first = await b.req('POST', '/runs/lateadapter/events', ev({ adapterPath: adapter }));
    t.equal(first.status, 201, JSON.stringify(first.body));
    const run = await b.req('GET', '/runs/lateadapter');
    t.equal(run.body['run'].adapter.rootKind, 'repo-root');
    t.same(
      run.body['run'].nodes.filter((n: any) => n.required).map((n: any) => n.id),
      ['intake', 'prove', 'handoff'],
    );
    await expectRejected(
      t,
      b,
      'lateadapter',
      () => b.req('POST', '/runs/lateadapter/events', ev({ adapterPath: other })),
      409,
      'event_state_violation',
    );
    t.equal(
      (await b.req('POST', '/runs/lateadapter/events', ev({ adapterPath: adapter }))).status,
      201,
      'the sealed adapter may be repeated',
    );
  });

  t.test('a sync call adds what the create left out, before any event', async (t) => {
    const adapter = join(b.t.repo, 'sync-adapter.json');
    await writeFile(adapter, JSON.stringify({ runtime: { requiredNodes: ['route'] } }));
    // Root first, then the adapter.
    t.equal((await b.req('POST', '/runs', { id: 'sync1', artifactRoot: b.t.artifactRoot })).status, 201);
    const withAdapter = await b.req('POST', '/runs', { id: 'sync1', adapterPath: adapter });
    t.equal(withAdapter.status, 200, JSON.stringify(withAdapter.body));
    t.equal(withAdapter.body['run'].adapter.rootKind, 'repo-root');
    t.equal(withAdapter.body['run'].artifactRootSet, true);
    // Adapter first, then the root: the sealed adapter stays as it was.
    t.equal((await b.req('POST', '/runs', { id: 'sync2', adapterPath: adapter })).status, 201);
    const withRoot = await b.req('POST', '/runs', { id: 'sync2', artifactRoot: b.t.artifactRoot });
    t.equal(withRoot.status, 200, JSON.stringify(withRoot.body));
    t.equal(withRoot.body['run'].artifactRootSet, true);
    t.same(
      withRoot.body['run'].nodes.filter((n: any) => n.required).map((n: any) => n.id),
      ['route', 'prove', 'handoff'],
    );
    // A sealed adapter whose file changed since is not sealed again with other bytes.
    t.equal((await b.req('POST', '/runs', { id: 'sync3', adapterPath: adapter })).status, 201);
    await writeFile(adapter, JSON.stringify({ runtime: { requiredNodes: ['intake'] } }));
    const changed = await expectRejected(
      t,
      b,
      'sync3',
      () => b.req('POST', '/runs', { id: 'sync3', artifactRoot: b.t.artifactRoot }),
      409,
      'run_already_exists',
    );
    t.match(changed.body['problems'], [/^adapterPath/]);
    t.equal((await b.req('GET', '/runs/sync3')).body['run'].artifactRootSet, false, 'nothing was sealed');
  });

  t.test(
    'an assurance adapter commissions the run whether sealed on create, sync or first event',
    async (t) => {
      const adapter = join(b.t.repo, 'assured-adapter.json');
      await writeFile(adapter, JSON.stringify({ finishLineAssurance: { required: true } }));
      const created = await b.req('POST', '/runs', { id: 'assured1', adapterPath: adapter });
      t.equal(created.status, 201, JSON.stringify(created.body));
      t.equal(created.body['run'].commissioned, true, 'sealed on create');
      const rootOnly = { artifactRoot: b.t.artifactRoot };
      const plain = await b.req('POST', '/runs', { id: 'assured2', ...rootOnly });
      t.equal(plain.body['run'].commissioned, false, 'no adapter yet');
      const ordinary = join(b.t.repo, 'unassured-adapter.json');
      await writeFile(ordinary, JSON.stringify({ finishLineAssurance: { required: false } }));
      const other = await b.req('POST', '/runs', { id: 'assured0', adapterPath: ordinary });
      t.equal(other.body['run'].commissioned, false, 'an adapter without assurance does not commission');
      const synced = await b.req('POST', '/runs', { id: 'assured2', adapterPath: adapter });
      t.equal(synced.status, 200, JSON.stringify(synced.body));
      t.equal(synced.body['run'].commissioned, true, 'sealed by a sync call');
      t.equal((await b.req('GET', '/runs/assured2')).body['run'].commissioned, true, 'and stored so');
      t.equal((await b.req('POST', '/runs', { id: 'assured3', ...rootOnly })).status, 201);
      const first = await b.req('POST', '/runs/assured3/events', ev({ adapterPath: adapter }));
      t.equal(first.status, 201, JSON.stringify(first.body));
      const read = await b.req('GET', '/runs/assured3');
      t.equal(read.body['run'].commissioned, true, 'sealed by the first event');
    },
  );

  t.test('adding the adapter never reseals a root whose path now leads elsewhere', async (t) => {
    const a = join(b.t.dir, 'swap-a');
    const other = join(b.t.dir, 'swap-b');
    await mkdir(a);
    await mkdir(other);
    const adapter = join(b.t.repo, 'swap-adapter.json');
    await writeFile(adapter, JSON.stringify({ runtime: { requiredNodes: ['intake'] } }));
    t.equal((await b.req('POST', '/runs', { id: 'swap', artifactRoot: a })).status, 201);
    const config = () => b.config('swap');
    const sealed = await config();
    // The sealed root's path is swapped for a link to another directory.
    await rename(a, `${a}.old`);
    await symlink(other, a);
    const refused = await expectRejected(
      t,
      b,
      'swap',
      () => b.req('POST', '/runs/swap/events', ev({ adapterPath: adapter })),
      409,
      'event_state_violation',
    );
    t.match(refused.body['problems'], [/^artifactRoot differs/]);
    t.ok((await config()).equals(sealed), 'run-config.json unchanged');
  });

  t.test('a run with events and no root cannot gain one', async (t) => {
    t.equal((await b.req('POST', '/runs/noroot/events', ev())).status, 201);
    await expectRejected(
      t,
      b,
      'noroot',
      () => b.req('POST', '/runs', { id: 'noroot', artifactRoot: b.t.artifactRoot }),
      409,
      'run_already_exists',
    );
    await expectRejected(
      t,
      b,
      'noroot',
      () => b.req('POST', '/runs/noroot/events', ev({ artifactRoot: b.t.artifactRoot })),
      409,
      'event_state_violation',
    );
  });

  t.test('adapter paths outside the allowed roots are refused', async (t) => {
    const outside = await writeArtifact(b.t.dir, 'elsewhere/project-adapter.json', '{}');
    const linkDir = join(b.t.artifactRoot, 'adapters');
    await mkdir(linkDir, { recursive: true });
    await symlink(outside, join(linkDir, 'project-adapter.json'));
    const cases = [
      outside,
      '/etc/hostname',
      '../elsewhere/project-adapter.json',
      join(linkDir, 'project-adapter.json'),
      'adapters/project-adapter.json',
    ];
    for (const adapterPath of cases) {
      await expectRejected(
        t,
        b,
        'ad',
        () => b.req('POST', '/runs', { id: 'ad', artifactRoot: b.t.artifactRoot, adapterPath }),
        400,
        'adapter_policy_violation',
      );
      await expectRejected(
        t,
        b,
        'ad',
        () => b.req('POST', '/runs/ad/events', ev({ artifactRoot: b.t.artifactRoot, adapterPath })),
        400,
        'adapter_policy_violation',
      );
      t.equal((await b.req('GET', '/runs/ad')).status, 404, `${adapterPath}: no run`);
    }
  });

  t.test('an adapter inside HARNESS_REPO_ROOT is accepted and narrows the required nodes', async (t) => {
    await writeFile(
      join(b.t.repo, 'project-adapter.json'),
      JSON.stringify({ runtime: { requiredNodes: ['intake'] } }),
    );
    const r = await b.req('POST', '/runs', {
      id: 'adok',
      artifactRoot: b.t.artifactRoot,
      adapterPath: join(b.t.repo, 'project-adapter.json'),
    });
    t.equal(r.status, 201, JSON.stringify(r.body));
    t.equal(r.body['run'].adapter.rootKind, 'repo-root');
    t.same(
      r.body['run'].nodes.filter((n: any) => n.required).map((n: any) => n.id),
      ['intake', 'prove', 'handoff'],
      'prove and handoff stay required',
    );
    t.notOk(JSON.stringify(r.body).includes(b.t.repo), 'no absolute adapter path returned');
  });

  t.test('a sealed adapter is fixed: another adapter is refused on a repeat and on an event', async (t) => {
    const first = join(b.t.repo, 'fixed-adapter.json');
    const second = join(b.t.repo, 'other-adapter.json');
    await writeFile(first, JSON.stringify({ runtime: { requiredNodes: ['intake'] } }));
    await writeFile(second, JSON.stringify({ runtime: { requiredNodes: ['route'] } }));
    const setup = { artifactRoot: b.t.artifactRoot, adapterPath: first };
    t.equal((await b.req('POST', '/runs', { id: 'adfix', ...setup })).status, 201);
    t.equal(
      (await b.req('POST', '/runs', { id: 'adfix', ...setup })).status,
      200,
      'the same adapter repeats',
    );
    const repeat = await expectRejected(
      t,
      b,
      'adfix',
      () => b.req('POST', '/runs', { id: 'adfix', adapterPath: second }),
      409,
      'run_already_exists',
    );
    t.same(
      repeat.body['problems'].map((p: string) => p.split(' ')[0]),
      ['adapterPath'],
    );
    const event = await expectRejected(
      t,
      b,
      'adfix',
      () => b.req('POST', '/runs/adfix/events', ev({ adapterPath: second })),
      409,
      'event_state_violation',
    );
    t.match(event.body['problems'], [/^adapterPath differs/]);
    const run = await b.req('GET', '/runs/adfix');
    t.same(
      run.body['run'].nodes.filter((n: any) => n.required).map((n: any) => n.id),
      ['intake', 'prove', 'handoff'],
      'the sealed adapter still decides the required nodes',
    );
  });

  t.test('a differing adapter is named even when the root the repeat adds is invalid', async (t) => {
    const sealed = join(b.t.repo, 'noroot-adapter.json');
    const other = join(b.t.repo, 'noroot-other-adapter.json');
    await writeFile(sealed, JSON.stringify({ runtime: { requiredNodes: ['intake'] } }));
    await writeFile(other, JSON.stringify({ runtime: { requiredNodes: ['route'] } }));
    t.equal((await b.req('POST', '/runs', { id: 'adnoroot', adapterPath: sealed })).status, 201);
    const gone = join(b.t.dir, 'never-made-root');
    const r = await expectRejected(
      t,
      b,
      'adnoroot',
      () => b.req('POST', '/runs', { id: 'adnoroot', artifactRoot: gone, adapterPath: other }),
      409,
      'run_already_exists',
    );
    t.match(r.body['problems'], [/^adapterPath differs/]);
    t.equal((await b.req('GET', '/runs/adnoroot')).body['run'].artifactRootSet, false);
  });

  t.test('an adapter in the sealed root repeats without the root being named again', async (t) => {
    const root = join(b.t.dir, 'root-with-adapter');
    await mkdir(root);
    const adapter = join(root, 'adapter.json');
    await writeFile(adapter, JSON.stringify({ runtime: { requiredNodes: ['intake'] } }));
    const made = await b.req('POST', '/runs', { id: 'inroot', artifactRoot: root, adapterPath: adapter });
    t.equal(made.status, 201, JSON.stringify(made.body));
    const repeat = await b.req('POST', '/runs', { id: 'inroot', adapterPath: adapter });
    t.equal(repeat.status, 200, JSON.stringify(repeat.body));
  });

  t.test('a sealed adapter is its path and its bytes: a copy, or the file edited, differs', async (t) => {
    const sealed = join(b.t.repo, 'bytes-adapter.json');
    const copy = join(b.t.repo, 'bytes-adapter-copy.json');
    const text = JSON.stringify({ runtime: { requiredNodes: ['intake'] } });
    await writeFile(sealed, text);
    await writeFile(copy, text);
    t.equal((await b.req('POST', '/runs', { id: 'adbytes', adapterPath: sealed })).status, 201);
    const refused = async (adapterPath: string) => {
      const r = await expectRejected(
        t,
        b,
        'adbytes',
        () => b.req('POST', '/runs', { id: 'adbytes', adapterPath }),
        409,
        'run_already_exists',
      );
      t.match(r.body['problems'], [/^adapterPath differs/]);
    };
    await refused(copy);
    await writeFile(sealed, JSON.stringify({ runtime: { requiredNodes: ['route'] } }));
    await refused(sealed);
  });

  t.test('an invalid adapter document is refused', async (t) => {
    await writeFile(
      join(b.t.repo, 'bad-adapter.json'),
      JSON.stringify({ runtime: { requiredNodes: ['cloud-aws'] } }),
    );
    await expectRejected(
      t,
      b,
      'adbad',
      () => b.req('POST', '/runs', { id: 'adbad', adapterPath: join(b.t.repo, 'bad-adapter.json') }),
      400,
      'adapter_policy_violation',
    );
  });

  t.test('a refusal quoting adapter text is still one line', async (t) => {
    // The message quotes the adapter path and node IDs the adapter names: text a client chose.
    await writeFile(
      join(b.t.repo, 'nl-adapter.json'),
      JSON.stringify({ runtime: { requiredNodes: ['cloud\nfake: line'] } }),
    );
    for (const adapterPath of ['missing\nfake: line.json', join(b.t.repo, 'nl-adapter.json')]) {
      for (const send of [
        () => b.req('POST', '/runs', { id: 'adnl', artifactRoot: b.t.artifactRoot, adapterPath }),
        () => b.req('POST', '/runs/adnl/events', ev({ artifactRoot: b.t.artifactRoot, adapterPath })),
      ]) {
        const r = await expectRejected(t, b, 'adnl', send, 400, 'adapter_policy_violation');
        t.match(r.body['message'], /\\u\{a\}fake: line/, 'the line break is shown as an escape');
      }
    }
  });
});

t.test(
  'a refused completion as the first event of a new run keeps the run.blocked it recorded',
  async (t) => {
    const b = await startTestBridge();
    t.teardown(() => cleanup(b));
    const r = await b.req('POST', '/runs/early/events', ev({ type: 'run.completed', nodeId: 'handoff' }));
    assertEnvelope(t, r.body, 'finish_line_blocked');
    // Refused, but not before the refusal was journaled: the run is not discarded with it.
    const run = (await b.req('GET', '/runs/early')).body['run'];
    t.equal(run?.eventCount, 1, 'the run holds its run.blocked record');
    t.same(
      (await allEvents(b, 'early')).map((e) => e.type),
      ['run.blocked'],
    );
  },
);
