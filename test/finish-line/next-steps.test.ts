import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { DEFAULT_ARTIFACT_BY_NODE, emptyState, NODE_IDS, type RunConfig } from '../../src/contract/index.js';
import type { RunFacts } from '../../src/validators/facts.js';
import { nextStep } from '../../src/validators/next-step.js';
import {
  CONTENT_KINDS,
  PROBLEM_KINDS,
  type Problem,
  type ProblemKind,
} from '../../src/validators/problem.js';
import { ROOT } from '../helpers/paths.js';

/**
 * One fix per problem kind (src/validators/next-step.ts), each naming this run, the node and the
 * artifact path the problem is about, or a docs/next-steps.md section that exists. The table is a
 * Record over every kind, so a kind added without a case here does not compile.
 */
const RUN = 'demo-1';
const ROOT_DIR = '/srv/art root';
const QROOT = `'${ROOT_DIR}'`;

function facts(): RunFacts {
  const config = {
    runId: RUN,
    artifactRoot: ROOT_DIR,
    requiredNodes: [...NODE_IDS],
    artifactByNode: { ...DEFAULT_ARTIFACT_BY_NODE, route: 'custom/route.json' },
  } as unknown as RunConfig;
  const state = emptyState(RUN, '2025-01-01T00:00:00Z');
  state.runMode = 'live';
  return { runId: RUN, config, state };
}

const approval = (nodeId: 'redzone' | 'implement', scope = "deploy to prod's cluster") => ({
  nodeId,
  owner: 'security-lead',
  scope,
  status: 'pending' as const,
  requestedSeq: 3,
  requestedAt: '2025-01-01T00:00:00Z',
  decidedSeq: null,
  decidedAt: null,
});

const PROVE = `harness proof run --run ${RUN} --artifact-root ${QROOT} -- (test-command) && harness node pass ${RUN} prove --artifact proof/proof.json`;
const doc = (kind: string) => `see docs/next-steps.md#${kind}`;

const CASES: Record<
  ProblemKind,
  { problem: { kind: ProblemKind; [field: string]: unknown }; fix: string; nodeId?: string }
> = {
  'node-not-passed': {
    problem: { kind: 'node-not-passed', nodeId: 'route' },
    nodeId: 'route',
    fix: `harness node pass ${RUN} route --artifact custom/route.json`,
  },
  'node-skipped-without-reason': {
    problem: { kind: 'node-skipped-without-reason', nodeId: 'design-anchors' },
    nodeId: 'design-anchors',
    fix: `harness node skip ${RUN} design-anchors --reason (why-it-does-not-apply)`,
  },
  'artifact-node-failed': {
    problem: { kind: 'artifact-node-failed', nodeId: 'implement', path: 'session/events.jsonl' },
    nodeId: 'implement',
    fix: `harness node pass ${RUN} implement --artifact session/events.jsonl`,
  },
  'artifact-not-verified': {
    problem: { kind: 'artifact-not-verified', nodeId: 'prove', path: 'proof/proof.json' },
    nodeId: 'prove',
    fix: PROVE,
  },
  'artifact-failed': {
    problem: { kind: 'artifact-failed', nodeId: 'handoff', path: 'handoff/final.md' },
    nodeId: 'handoff',
    fix: `harness node pass ${RUN} handoff --artifact handoff/final.md`,
  },
  'artifact-skipped-without-reason': {
    problem: {
      kind: 'artifact-skipped-without-reason',
      nodeId: 'qa-break-it',
      path: 'qa/break-it-results.md',
    },
    nodeId: 'qa-break-it',
    fix: `harness node skip ${RUN} qa-break-it --reason (why-it-does-not-apply)`,
  },
  'approval-pending': {
    problem: {
      kind: 'approval-pending',
      nodeId: 'redzone',
      owner: 'security-lead',
      scope: "deploy to prod's cluster",
    },
    nodeId: 'redzone',
    fix: `harness approve ${RUN} --owner security-lead --scope 'deploy to prod'\\''s cluster' --grant`,
  },
  'approval-drift': {
    problem: {
      kind: 'approval-drift',
      nodeId: 'redzone',
      owner: 'security-lead',
      scope: 'db',
      path: 'approvals/redzone.json',
    },
    nodeId: 'redzone',
    fix: `harness emit ${RUN} approval.requested redzone 'decide again: approvals/redzone.json changed' --status needs_approval --approval-owner security-lead --approval-scope db`,
  },
  'self-heal-unresolved': {
    problem: { kind: 'self-heal-unresolved' },
    nodeId: 'self-heal',
    fix: `harness emit ${RUN} self_heal.pr_opened self-heal 'pull request opened' --self-heal-pr-url (pull-request-url)`,
  },
  'self-heal-unproven': {
    problem: { kind: 'self-heal-unproven' },
    nodeId: 'self-heal',
    fix: doc('self-heal-unproven'),
  },
  'artifact-changed': {
    problem: { kind: 'artifact-changed', nodeId: 'intake', path: 'run/intake.json' },
    nodeId: 'intake',
    fix: `harness emit ${RUN} artifact.written intake 'run/intake.json written again' --artifact run/intake.json`,
  },
  'artifact-unverifiable': {
    problem: { kind: 'artifact-unverifiable', nodeId: 'intake', path: 'run/intake.json' },
    nodeId: 'intake',
    fix: doc('artifact-unverifiable'),
  },
  'artifact-credential': {
    problem: { kind: 'artifact-credential', path: 'run/intake.json' },
    fix: doc('artifact-credential'),
  },
  proof: { problem: { kind: 'proof' }, nodeId: 'prove', fix: PROVE },
  'post-proof-mutation': { problem: { kind: 'post-proof-mutation' }, nodeId: 'prove', fix: PROVE },
  'route-binding': {
    problem: { kind: 'route-binding' },
    nodeId: 'route',
    fix: `harness route write ${RUN} --artifact-root ${QROOT} --work-type (work-type) --goal (goal) && harness node pass ${RUN} route --artifact custom/route.json`,
  },
  'run-packet': {
    problem: { kind: 'run-packet' },
    fix: `harness packet write ${RUN} --artifact-root ${QROOT}`,
  },
  review: {
    problem: { kind: 'review' },
    fix: `harness review sign --run ${RUN} --artifact-root ${QROOT} --key (private-key-file) --key-id (key-id) --roster (roster-file)`,
  },
  'review-signature': {
    problem: { kind: 'review-signature' },
    fix: `harness review sign --run ${RUN} --artifact-root ${QROOT} --key (private-key-file) --key-id (key-id) --roster (roster-file)`,
  },
  'production-readiness': {
    problem: { kind: 'production-readiness' },
    nodeId: 'production-readiness',
    fix: doc('production-readiness'),
  },
  'corrective-work': { problem: { kind: 'corrective-work' }, fix: doc('corrective-work') },
  'self-heal-proposal': {
    problem: { kind: 'self-heal-proposal' },
    nodeId: 'self-heal',
    fix: doc('self-heal-proposal'),
  },
  waivers: { problem: { kind: 'waivers' }, fix: doc('waivers') },
  'external-validation-runtime': {
    problem: { kind: 'external-validation-runtime' },
    fix: doc('external-validation-runtime'),
  },
  'secret-scan': { problem: { kind: 'secret-scan' }, fix: doc('secret-scan') },
  'validators-failed': { problem: { kind: 'validators-failed' }, fix: doc('validators-failed') },
};

t.test('every kind has its fix, naming this run, its node and its artifact path', async (t) => {
  t.same(Object.keys(CASES).sort(), [...PROBLEM_KINDS].sort(), 'the table covers every kind');
  for (const kind of PROBLEM_KINDS) {
    const c = CASES[kind];
    const text = `the ${kind} problem`;
    const step = nextStep({ ...c.problem, text } as Problem, { facts: facts(), root: ROOT_DIR });
    t.same(step, { problem: text, ...(c.nodeId ? { nodeId: c.nodeId } : {}), fix: c.fix }, kind);
  }
});

t.test('a fix pasted with a placeholder left in runs nothing; filled in, it parses', async (t) => {
  // `sh -n` parses without running: a placeholder is a syntax error, never a redirection.
  const parses = (line: string) => {
    try {
      execFileSync('sh', ['-n', '-c', line], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  };
  const commands = Object.values(CASES)
    .map((c) => c.fix)
    .filter((fix) => fix.startsWith('harness '));
  const withHoles = commands.filter((fix) => /\([a-z-]+\)/.test(fix));
  t.ok(withHoles.length >= 5, `${withHoles.length} fixes have a placeholder`);
  for (const fix of withHoles) {
    t.notOk(parses(fix), `refused as shown: ${fix}`);
    t.ok(parses(fix.replaceAll(/\(([a-z-]+)\)/g, "'$1'")), `parses filled in: ${fix}`);
  }
});

t.test('a fix that sends the docs names a section that exists', async (t) => {
  const page = await readFile(join(ROOT, 'docs/next-steps.md'), 'utf8');
  const sections = new Set([...page.matchAll(/^## (\S+)$/gm)].map((m) => m[1]));
  const anchors = Object.values(CASES)
    .map((c) => /^see docs\/next-steps\.md#(\S+)$/.exec(c.fix)?.[1])
    .filter((a) => a !== undefined);
  t.ok(anchors.length >= CONTENT_KINDS.length / 2, `${anchors.length} kinds send the docs`);
  for (const a of [...anchors, 'quarantined']) t.ok(sections.has(a), `docs/next-steps.md has ## ${a}`);
});

t.test('the artifact root is filled in only where the reader knows it', async (t) => {
  const step = nextStep({ kind: 'proof', text: 'proof: x' }, { facts: facts(), root: null });
  t.equal(step.fix.split(' ')[6], '(artifact-root)', 'a run view never shows an absolute path');
});

t.test('a pending approval names its node only when owner and scope do not tell it apart', async (t) => {
  const f = facts();
  f.state.approvals = [approval('redzone'), approval('implement'), approval('implement', 'other')];
  const p = {
    kind: 'approval-pending',
    nodeId: 'redzone',
    owner: 'security-lead',
    scope: "deploy to prod's cluster",
  };
  const step = nextStep({ ...p, text: 'x' } as Problem, { facts: f, root: null });
  t.equal(
    step.fix,
    `harness approve ${RUN} --owner security-lead --scope 'deploy to prod'\\''s cluster' --node redzone --grant`,
  );
});

t.test(
  'a node whose artifact is claimed passes without --artifact; a replay run says its mode',
  async (t) => {
    const f = facts();
    f.state.runMode = 'replay';
    f.state.artifacts['custom/route.json'] = { outcome: 'verified' } as never;
    const pass = nextStep({ kind: 'node-not-passed', nodeId: 'route', text: 'x' }, { facts: f, root: null });
    t.equal(pass.fix, `harness node pass ${RUN} route`);
    const heal = nextStep({ kind: 'self-heal-unresolved', text: 'x' }, { facts: f, root: null });
    t.match(heal.fix, / --mode replay$/);
  },
);
