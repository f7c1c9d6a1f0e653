import { createHash } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { expectRefused, runCli } from '../helpers/cli.js';
import { WAIVER } from '../helpers/commissioned-run.js';
import { buildFixture, type Fixture, failing } from '../helpers/finish-line-fixture.js';

/**
 * Issue 29 item 1: `harness route write` and `harness packet write` check what they write with the
 * gate's own rules. What they write passes those rules on the known-good fixture; what the gate
 * would refuse is refused (exit 2, one line) and the file is left as it was. The gate accepting the
 * writers' documents over HTTP: commissioned-run-writers.test.ts.
 */
const bytes = (f: Fixture, path: string) => readFile(join(f.root, path)).catch(() => null);

async function harness(f: Fixture, args: string[]) {
  const env = { PATH: process.env['PATH'] ?? '', HOME: join(f.repo, '..'), HARNESS_REPO_ROOT: f.repo };
  return runCli(args, env, f.repo);
}

/** Runs `args`, expects the refusal, and that `path` kept its bytes (or stayed absent). */
async function refused(t: Test, f: Fixture, path: string, args: string[], fragment: string) {
  const before = await bytes(f, path);
  expectRefused(t, await harness(f, args), fragment);
  t.same(await bytes(f, path), before, `${path} is unchanged`);
}

const route = (f: Fixture, ...extra: string[]) => [
  ...['route', 'write', f.runId, '--artifact-root', f.root, '--work-type', 'bug'],
  ...['--goal', 'add() adds', ...extra],
];
const packet = (f: Fixture, ...extra: string[]) => [
  ...['packet', 'write', f.runId, '--artifact-root', f.root, ...extra],
];

t.test('route write: the route-binding rule accepts what it writes', async (t) => {
  const f = await buildFixture(t);
  const r = await harness(f, route(f, '--replace', '--lane', 'backend'));
  t.equal(r.exitCode, 0, r.stderr);
  const doc = await f.read('run/route.json');
  t.match(doc, { runId: f.runId, workType: 'bug', lane: 'backend', goal: { runId: f.runId } });
  const written = (await bytes(f, 'run/route.json'))!;
  t.equal(JSON.parse(r.stdout).sha256, createHash('sha256').update(written).digest('hex'), 'prints its hash');
  t.same(await f.rule('route-binding'), [], 'bound to the run');
});

t.test('route write refuses what the gate would, and an existing route', async (t) => {
  const f = await buildFixture(t);
  const path = 'run/route.json';
  await refused(
    t,
    f,
    path,
    route(f, '--replace', '--lane', 'no spaces'),
    'does not validate as harness.route.v1',
  );
  await refused(
    t,
    f,
    path,
    route(f, '--replace', '--goal', 'x'.repeat(2001)),
    'does not validate as harness.route.v1',
  );
  await refused(t, f, path, route(f), 'run/route.json already exists');
  await refused(t, f, path, route(f, '--replace', '--work-type', 'nonsense'), 'nonsense');
});

t.test('packet write: the whole finish line accepts what it writes', async (t) => {
  const f = await buildFixture(t);
  const r = await harness(f, packet(f));
  t.equal(r.exitCode, 0, r.stderr);
  const doc = await f.read('run/packet.json');
  const review = await f.read('review/review.json');
  t.equal(doc.subject.commit, f.postFix, 'the post-fix commit');
  t.same(doc.roles, review.roster, 'the roster the reviewer signed');
  t.same(failing(await f.run()), [], 'every rule holds');
});

t.test('packet write with waivers covers the waived layer', async (t) => {
  const f = await buildFixture(t);
  await f.mutate('production/layer-assessment.json', (d) => {
    Object.assign(
      d.layers.find((l: { layer: string }) => l.layer === 'rate-limiting'),
      {
        status: 'waived',
        waiverId: WAIVER.waiverId,
      },
    );
  });
  await f.resign();
  await refused(t, f, 'run/packet.json', packet(f), `layer rate-limiting is waived but ${WAIVER.waiverId}`);
  const waivers = join(f.repo, '..', 'waivers.json');
  await writeFile(waivers, JSON.stringify([WAIVER]));
  const r = await harness(f, packet(f, '--waivers', waivers));
  t.equal(r.exitCode, 0, r.stderr);
  t.same((await f.read('run/packet.json')).waivers, [WAIVER]);
});

t.test('packet write refuses what the gate would refuse', async (t) => {
  const f = await buildFixture(t);
  const path = 'run/packet.json';
  const waivers = join(f.repo, '..', 'waivers.json');
  await writeFile(waivers, JSON.stringify([{ ...WAIVER, status: 'forever' }]));
  await refused(t, f, path, packet(f, '--waivers', waivers), 'does not validate as harness.run-packet.v3');

  await f.mutate('rca/rca.json', (rca) => {
    rca.postFix.commit = f.preFix;
  });
  await refused(t, f, path, packet(f), `rca/rca.json names the post-fix commit ${f.preFix}`);
  await f.mutate('rca/rca.json', (rca) => {
    rca.postFix.commit = f.postFix;
  });
  t.equal((await harness(f, packet(f))).exitCode, 0, 'each case is refused for its own reason alone');

  await f.mutate('run/route.json', (r) => {
    r.summary = 'another summary';
  });
  await refused(t, f, path, packet(f), 'unsigned evidence change: run/route.json bound by the scout');

  await rm(join(f.root, 'review/review.json'));
  await rm(join(f.root, path));
  await refused(t, f, path, packet(f), 'review/review.json is missing');
});
