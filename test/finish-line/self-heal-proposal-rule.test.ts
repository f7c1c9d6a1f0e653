import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { applyEntry, emptyState, type RunConfig, type RunState } from '../../src/contract/index.js';
import type { RunFacts } from '../../src/validators/facts.js';
import { selfHealResolved } from '../../src/validators/self-heal.js';
import { selfHealProposal } from '../../src/validators/self-heal-proposal.js';
import { changedWhileChecked } from '../../src/validators/verified-bytes.js';

/**
 * The content rule behind a self-heal resolved by a local proposal: self_heal/pr.json must be a
 * harness.self-heal-proposal.v1 of this run whose patch is present at the hash it binds.
 */
const root = await realpath(await mkdtemp(join(tmpdir(), 'harness-proposal-')));
t.teardown(() => rm(root, { recursive: true, force: true }));
const patch = 'diff --git a/x b/x\n+fixed\n';
await mkdir(join(root, 'self_heal'), { recursive: true });
await writeFile(join(root, 'self_heal', 'fix.patch'), patch);
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

const facts = {
  runId: 'heal',
  config: {} as RunConfig,
  state: { selfHeal: { resolution: { artifact: 'self_heal/pr.json' } } } as unknown as RunState,
} satisfies RunFacts;
const env = { realRoot: root, repoRoot: root, trustPin: '0'.repeat(64) };

async function problemsWith(
  over: Record<string, unknown>,
  verified?: Record<string, string>,
): Promise<string[]> {
  const proposal = {
    schema: 'harness.self-heal-proposal.v1',
    runId: 'heal',
    generatedAt: '2026-11-23T00:00:00.000Z',
    title: 'Close the gap',
    gap: 'the finish line found a missing check',
    target: { repository: 'acme/harness', baseRef: 'main' },
    patch: { path: 'self_heal/fix.patch', sha256: sha(patch) },
    files: ['x'],
    ...over,
  };
  await writeFile(join(root, 'self_heal', 'pr.json'), JSON.stringify(proposal));
  return selfHealProposal(facts, verified === undefined ? env : { ...env, verified });
}

t.test('a proposal of this run whose patch matches its hash holds', async (t) => {
  t.same(await problemsWith({}), []);
});

t.test('a proposal of another run is refused', async (t) => {
  t.same(await problemsWith({ runId: 'other' }), ['self_heal/pr.json runId is not this run']);
});

t.test('the patch is hashed once, against the digest the bridge verified there', async (t) => {
  t.same(await problemsWith({}, { 'self_heal/fix.patch': sha(patch) }), []);
  t.same(await problemsWith({}, { 'self_heal/fix.patch': sha('swapped back after the read') }), [
    `proposal patch: ${changedWhileChecked('self_heal/fix.patch')}`,
  ]);
});

t.test('a patch that does not match its bound hash is refused', async (t) => {
  t.same(await problemsWith({ patch: { path: 'self_heal/fix.patch', sha256: sha('another patch') } }), [
    'proposal patch self_heal/fix.patch does not match its hash',
  ]);
});

t.test('a missing patch, or the proposal as its own patch, is refused', async (t) => {
  t.match(await problemsWith({ patch: { path: 'self_heal/gone.patch', sha256: sha(patch) } }), [
    /^proposal patch: self_heal\/gone\.patch does not exist/,
  ]);
  t.same(await problemsWith({ patch: { path: 'self_heal/pr.json', sha256: sha(patch) } }), [
    'the proposal cannot be its own patch',
  ]);
});

t.test('a run not resolved by a proposal has nothing for this rule', async (t) => {
  const other = { ...facts, state: { selfHeal: { resolution: null } } as unknown as RunState };
  t.same(await selfHealProposal(other, env), []);
});

t.test('a resolution naming the proposal by selfHealPrUrl reaches both self-heal rules', async (t) => {
  const state = emptyState('heal', '2026-11-23T00:00:00.000Z');
  const event = (seq: number, type: 'self_heal.detected' | 'self_heal.pr_proposed', over = {}) => ({
    seq,
    event: {
      id: `e${seq}`,
      ts: '2026-11-23T00:00:01.000Z',
      type,
      actor: 'harness' as const,
      runMode: 'live' as const,
      eventSource: 'api' as const,
      nodeId: 'self-heal' as const,
      message: 'm',
      status: 'ok' as const,
      ...over,
    },
    claim: null,
  });
  applyEntry(state, event(0, 'self_heal.detected'));
  const claim = { path: 'self_heal/pr.json', sha256: sha('{}'), size: 2, mtimeMs: 1 };
  applyEntry(state, { ...event(1, 'self_heal.pr_proposed', { selfHealPrUrl: 'self_heal/pr.json' }), claim });
  const local = { ...facts, state } satisfies RunFacts;
  t.same(state.selfHeal.resolution, {
    type: 'self_heal.pr_proposed',
    prUrl: null,
    artifact: 'self_heal/pr.json',
  });
  t.same(selfHealResolved(local), [], 'the structural rule sees a verified proposal');
  await problemsWith({});
  t.same(await selfHealProposal(local, env), [], 'the content rule validates it');
  await problemsWith({ runId: 'other' });
  t.same(await selfHealProposal(local, env), ['self_heal/pr.json runId is not this run']);
  const failed = { status: 'failed', failureReason: 'f', recoveryPath: 'p', artifact: 'self_heal/pr.json' };
  applyEntry(state, { ...event(2, 'self_heal.pr_proposed', failed), claim });
  t.same(
    selfHealResolved(local),
    [
      {
        kind: 'self-heal-unproven',
        text: 'self-heal resolution carries neither a pull request URL nor a verified self_heal/pr.json',
      },
    ],
    'a proposal reported failed is no resolution',
  );
});
