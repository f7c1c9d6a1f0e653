import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { link, mkdir, rename, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { claimArtifact, type DescriptorHasher } from '../../src/validators/artifact-root.js';
import { cleanup, ev, startTestBridge } from '../helpers/bridge.js';
import { expectRejected, records, writeArtifact } from '../helpers/expect.js';

/**
 * SPEC Artifact, Errors 2 and CONTRACT 6: `artifact.written` names exactly its node's configured
 * path, which must be a regular file under the run's artifact root reached without a link at any
 * component; the journal records {path, sha256, size, mtimeMs} of the bytes actually opened.
 */
const written = (nodeId: string, artifact: string, over: Record<string, unknown> = {}) =>
  ev({ type: 'artifact.written', nodeId, artifact, ...over });

t.test('artifact.written verification', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const root = b.t.artifactRoot;
  const RUN = 'av';
  t.equal((await b.req('POST', `/runs/${RUN}/events`, ev({ artifactRoot: root }))).status, 201);
  const refuse = (label: string, body: Record<string, unknown>, status: number, code: string) =>
    t.test(label, async (t) => {
      await expectRejected(t, b, RUN, () => b.req('POST', `/runs/${RUN}/events`, body), status, code);
    });

  t.test('a self-heal proposal names exactly self_heal/pr.json', async (t) => {
    // Both files exist, so only the name rule can refuse the other one.
    await writeArtifact(root, 'self_heal/pr.json', '{}');
    await writeArtifact(root, 'self_heal/other.json', '{}');
    const proposal = (artifact: string) =>
      ev({ type: 'self_heal.pr_proposed', nodeId: 'self-heal', artifact });
    const r = await expectRejected(
      t,
      b,
      RUN,
      () => b.req('POST', `/runs/${RUN}/events`, proposal('self_heal/other.json')),
      400,
      'artifact_verification_failed',
    );
    t.match(r.body['message'], /self_heal\/pr\.json/);
  });

  t.test('a regular file is claimed with the digest of its bytes', async (t) => {
    const bytes = '{"intake":true}\n';
    await writeArtifact(root, 'run/intake.json', bytes);
    const r = await b.req('POST', `/runs/${RUN}/events`, written('intake', 'run/intake.json'));
    t.equal(r.status, 201, JSON.stringify(r.body));
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    t.match(r.body['event'].claim, { path: 'run/intake.json', sha256, size: bytes.length });
    t.type(r.body['event'].claim.mtimeMs, 'number');
    const rec = records(await b.journal(RUN)).at(-1)!;
    t.same(
      Object.keys(rec.claim).sort(),
      ['mtimeMs', 'path', 'sha256', 'size'],
      'the journal holds the claim',
    );
    t.equal(rec.claim.sha256, sha256);
  });

  t.test('a large file (hashed in the worker pool) is claimed correctly', async (t) => {
    const big = Buffer.alloc(3 * 1024 * 1024 + 17, 7);
    await writeArtifact(root, 'run/route.json', big);
    const r = await b.req('POST', `/runs/${RUN}/events`, written('route', 'run/route.json'));
    t.equal(r.status, 201, JSON.stringify(r.body));
    t.equal(r.body['event'].claim.sha256, createHash('sha256').update(big).digest('hex'));
    t.equal(r.body['event'].claim.size, big.length);
  });

  refuse(
    'a missing file',
    written('code-intelligence', 'graph/graph.json'),
    400,
    'artifact_verification_failed',
  );

  t.test('a directory', async (t) => {
    await mkdir(join(root, 'design', 'anchors.json'), { recursive: true });
    await expectRejected(
      t,
      b,
      RUN,
      () => b.req('POST', `/runs/${RUN}/events`, written('design-anchors', 'design/anchors.json')),
      400,
      'artifact_verification_failed',
    );
  });

  t.test('a hard link to a file outside the root', async (t) => {
    const outside = await writeArtifact(b.t.dir, 'outside/linked.json', '{"owned":"elsewhere"}');
    await mkdir(join(root, 'smoke'), { recursive: true });
    await link(outside, join(root, 'smoke', 'smoke_proof.json'));
    await expectRejected(
      t,
      b,
      RUN,
      () => b.req('POST', `/runs/${RUN}/events`, written('live-smoke', 'smoke/smoke_proof.json')),
      400,
      'artifact_verification_failed',
    );
  });

  t.test('a symlink leaf, even one pointing inside the root', async (t) => {
    await writeArtifact(root, 'design/real.md', '# real');
    await symlink(join(root, 'design', 'real.md'), join(root, 'design', 'system_design.md'));
    await expectRejected(
      t,
      b,
      RUN,
      () => b.req('POST', `/runs/${RUN}/events`, written('system-design', 'design/system_design.md')),
      400,
      'artifact_verification_failed',
    );
    const outside = await writeArtifact(b.t.dir, 'outside/secret.json', '{"secret":1}');
    await mkdir(join(root, 'production'), { recursive: true });
    await symlink(outside, join(root, 'production', 'layer-assessment.json'));
    await expectRejected(
      t,
      b,
      RUN,
      () =>
        b.req(
          'POST',
          `/runs/${RUN}/events`,
          written('production-readiness', 'production/layer-assessment.json'),
        ),
      400,
      'artifact_verification_failed',
    );
  });

  t.test('a symlinked parent directory (inside or outside the root)', async (t) => {
    await writeArtifact(root, 'real-cloud/service-map.json', '{}');
    await symlink(join(root, 'real-cloud'), join(root, 'cloud'));
    await expectRejected(
      t,
      b,
      RUN,
      () => b.req('POST', `/runs/${RUN}/events`, written('cloud-platform', 'cloud/service-map.json')),
      400,
      'artifact_verification_failed',
    );
    await writeArtifact(b.t.dir, 'outside-session/events.jsonl', '{}\n');
    await symlink(join(b.t.dir, 'outside-session'), join(root, 'session'));
    await expectRejected(
      t,
      b,
      RUN,
      () => b.req('POST', `/runs/${RUN}/events`, written('implement', 'session/events.jsonl')),
      400,
      'artifact_verification_failed',
    );
  });

  t.test('a FIFO is not a regular file (and does not hang the bridge)', async (t) => {
    await mkdir(join(root, 'approvals'), { recursive: true });
    execFileSync('mkfifo', [join(root, 'approvals', 'redzone.json')]);
    await expectRejected(
      t,
      b,
      RUN,
      () => b.req('POST', `/runs/${RUN}/events`, written('redzone', 'approvals/redzone.json')),
      400,
      'artifact_verification_failed',
    );
  });

  // Path shape is part of the event contract (CONTRACT 6): refused before the file system is touched.
  for (const artifact of [
    '../outside/secret.json',
    'run/../run/intake.json',
    '/etc/passwd',
    'run\\intake.json',
    'run//intake.json',
    './run/intake.json',
    'run/intake.json\0',
  ]) {
    refuse(`path ${JSON.stringify(artifact)}`, written('intake', artifact), 400, 'event_contract_violation');
  }

  t.test('each path problem is named once', async (t) => {
    for (const [artifact, problems] of [
      ['/run/intake.json', ['artifact path must be relative']],
      ['run/intake.json\0', ['artifact path must not contain NUL']],
    ] as const) {
      const r = await expectRejected(
        t,
        b,
        RUN,
        () => b.req('POST', `/runs/${RUN}/events`, written('intake', artifact)),
        400,
        'event_contract_violation',
      );
      t.same(r.body['problems'], problems, JSON.stringify(artifact));
    }
  });

  t.test('`..` is refused as a segment, not inside a file name', async (t) => {
    // CONTRACT 6 "without `..`": a name such as `intake..v2.json` climbs nowhere.
    const adapter = join(b.t.repo, 'dots-adapter.json');
    await writeFile(
      adapter,
      JSON.stringify({
        runtime: { requiredNodes: ['intake'], artifactByNode: { intake: 'run/intake..v2.json' } },
      }),
    );
    const run = 'dots';
    const first = await b.req(
      'POST',
      `/runs/${run}/events`,
      ev({ artifactRoot: root, adapterPath: adapter }),
    );
    t.equal(first.status, 201, JSON.stringify(first.body));
    await writeArtifact(root, 'run/intake..v2.json', '{}');
    const r = await b.req('POST', `/runs/${run}/events`, written('intake', 'run/intake..v2.json'));
    t.equal(r.status, 201, JSON.stringify(r.body));
    t.equal(r.body['event'].claim.path, 'run/intake..v2.json');
  });

  t.test('a path other than the node’s configured artifact', async (t) => {
    await writeArtifact(root, 'qa/break-it-results.md', '# qa');
    for (const [nodeId, artifact] of [
      ['intake', 'qa/break-it-results.md'],
      ['qa-break-it', 'run/intake.json'],
      ['qa-break-it', 'qa/break-it-results.MD'],
    ] as const) {
      await expectRejected(
        t,
        b,
        RUN,
        () => b.req('POST', `/runs/${RUN}/events`, written(nodeId, artifact)),
        400,
        'artifact_verification_failed',
      );
    }
    const ok = await b.req('POST', `/runs/${RUN}/events`, written('qa-break-it', 'qa/break-it-results.md'));
    t.equal(ok.status, 201);
  });

  t.test('the artifactRoot cannot change once set', async (t) => {
    const other = join(b.t.dir, 'other-root');
    await mkdir(other, { recursive: true });
    await writeArtifact(other, 'proof/proof.json', '{}');
    await expectRejected(
      t,
      b,
      RUN,
      () =>
        b.req('POST', `/runs/${RUN}/events`, written('prove', 'proof/proof.json', { artifactRoot: other })),
      409,
      'event_state_violation',
    );
    await expectRejected(
      t,
      b,
      RUN,
      () => b.req('POST', `/runs/${RUN}/events`, ev({ artifactRoot: other })),
      409,
      'event_state_violation',
    );
    // Naming the sealed root again (even through a link to it) is not a change.
    const alias = join(b.t.dir, 'root-alias');
    await symlink(root, alias);
    t.equal((await b.req('POST', `/runs/${RUN}/events`, ev({ artifactRoot: root }))).status, 201);
    t.equal((await b.req('POST', `/runs/${RUN}/events`, ev({ artifactRoot: alias }))).status, 201);
  });
});

t.test('a run without an artifact root', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  await writeArtifact(b.t.artifactRoot, 'run/intake.json', '{}');
  t.equal((await b.req('POST', '/runs/nr/events', ev())).status, 201);
  await expectRejected(
    t,
    b,
    'nr',
    () => b.req('POST', '/runs/nr/events', written('intake', 'run/intake.json')),
    409,
    'event_state_violation',
  );
  await expectRejected(
    t,
    b,
    'nr',
    () =>
      b.req(
        'POST',
        '/runs/nr/events',
        ev({ type: 'self_heal.pr_proposed', nodeId: 'self-heal', artifact: 'self_heal/pr.json' }),
      ),
    409,
    'event_state_violation',
  );
});

t.test('a refused first event seals nothing: the corrected retry is accepted', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const wrong = join(b.t.dir, 'wrong-root');
  await mkdir(wrong);
  await writeArtifact(b.t.artifactRoot, 'run/intake.json', '{}');
  await expectRejected(
    t,
    b,
    'retry',
    () => b.req('POST', '/runs/retry/events', written('intake', 'run/intake.json', { artifactRoot: wrong })),
    400,
    'artifact_verification_failed',
  );
  t.equal((await b.req('GET', '/runs/retry')).status, 404, 'no run was created');
  const r = await b.req(
    'POST',
    '/runs/retry/events',
    written('intake', 'run/intake.json', { artifactRoot: b.t.artifactRoot }),
  );
  t.equal(r.status, 201, JSON.stringify(r.body));
  t.equal(r.body['seq'], 0);
});

t.test('the claim hashes the opened descriptor, not the path again', async (t) => {
  const b = await startTestBridge();
  t.teardown(() => cleanup(b));
  const root = b.t.artifactRoot;
  const sha = (s: string) => createHash('sha256').update(s).digest('hex');
  // Small (hashed inline) and large (hashed by a pool thread from the descriptor) files.
  for (const [label, original] of [
    ['small', 'original bytes\n'],
    ['large', 'o'.repeat(256 * 1024)],
  ] as const) {
    await writeArtifact(root, 'run/intake.json', original);
    await writeArtifact(root, 'run/swap.json', `swapped ${label}\n`);
    let hashed = false;
    // The file is replaced under its name after it was opened and checked, before it is hashed.
    const swapThenHash: DescriptorHasher = async (opened, relPath) => {
      await rename(join(root, 'run/swap.json'), join(root, 'run/intake.json'));
      hashed = true;
      return b.ctx.pool.hasher(opened, relPath);
    };
    const claim = await claimArtifact(root, 'run/intake.json', swapThenHash);
    t.ok(hashed, `${label}: the hasher is given the opened file`);
    t.equal(claim.sha256, sha(original), `${label}: the digest is of the bytes opened`);
    t.equal(claim.size, original.length, `${label}: and so is the size`);
  }
});
