import { approveCommand, placeholder as hole, shellQuote as q } from '../contract/command-line.js';
import type { NodeId } from '../contract/index.js';
import type { RunFacts } from './facts.js';
import type { Problem, ProblemKind } from './problem.js';

/** A problem as `harness explain --json`, the MCP check, the run view and the UI show it. */
export interface NextStep {
  problem: string;
  nodeId?: NodeId;
  fix: string;
}

/**
 * What a fix is rendered from: the run's facts, and the real artifact root when the reader knows
 * it (a run view never shows an absolute path, so the bridge renders with null).
 */
export interface FixContext {
  facts: RunFacts;
  root: string | null;
}

/** Where a problem no command clears is explained (the anchor is the problem's kind). */
const doc = (kind: ProblemKind) => `see docs/next-steps.md#${kind}`;

const root = (ctx: FixContext) => (ctx.root === null ? hole('artifact-root') : q(ctx.root));

/** `--mode` for a run whose mode is not emit's default, so the event is not refused for its mode. */
function mode(ctx: FixContext): string {
  const m = ctx.facts.state.runMode;
  return m === null || m === 'live' ? '' : ` --mode ${m}`;
}

/** The node's configured artifact, when its claim is missing or reported failed (else nothing to add). */
function unclaimed(ctx: FixContext, nodeId: NodeId): string | null {
  const path = ctx.facts.config.artifactByNode[nodeId];
  if (path === undefined) return null;
  const claim = Object.hasOwn(ctx.facts.state.artifacts, path) ? ctx.facts.state.artifacts[path] : undefined;
  return claim === undefined || claim.outcome === 'failed' ? path : null;
}

/** The proof, written again by `harness proof run` and claimed by passing the prove node. */
function proveCommand(ctx: FixContext): string {
  const { runId, config } = ctx.facts;
  return `harness proof run --run ${q(runId)} --artifact-root ${root(ctx)} -- ${hole('test-command')} && ${passCommand(ctx, 'prove', config.artifactByNode.prove)}`;
}

function passCommand(ctx: FixContext, nodeId: NodeId, artifact: string | null): string {
  const pass = `harness node pass ${q(ctx.facts.runId)} ${nodeId}`;
  return artifact === null ? pass : `${pass} --artifact ${q(artifact)}`;
}

/** Passing a node with the artifact it still lacks; the prove node's proof is made first. */
function passNode(ctx: FixContext, nodeId: NodeId, artifact: string | null): string {
  return nodeId === 'prove' && artifact !== null ? proveCommand(ctx) : passCommand(ctx, nodeId, artifact);
}

const skipNode = (ctx: FixContext, nodeId: NodeId) =>
  `harness node skip ${q(ctx.facts.runId)} ${nodeId} --reason ${hole('why-it-does-not-apply')}`;

type Of<K extends ProblemKind> = Problem & { kind: K };
type Step = { fix: string; nodeId?: NodeId };

/** The one mapping from a problem's kind to what clears it. */
const FIXES: { [K in ProblemKind]: (p: Of<K>, ctx: FixContext) => Step } = {
  'node-not-passed': (p, ctx) => ({
    nodeId: p.nodeId,
    fix: passNode(ctx, p.nodeId, unclaimed(ctx, p.nodeId)),
  }),
  'node-skipped-without-reason': (p, ctx) => ({ nodeId: p.nodeId, fix: skipNode(ctx, p.nodeId) }),
  'artifact-node-failed': (p, ctx) => ({ nodeId: p.nodeId, fix: passNode(ctx, p.nodeId, p.path) }),
  'artifact-not-verified': (p, ctx) => ({ nodeId: p.nodeId, fix: passNode(ctx, p.nodeId, p.path) }),
  'artifact-failed': (p, ctx) => ({ nodeId: p.nodeId, fix: passNode(ctx, p.nodeId, p.path) }),
  'artifact-skipped-without-reason': (p, ctx) => ({ nodeId: p.nodeId, fix: skipNode(ctx, p.nodeId) }),
  'approval-pending': (p, ctx) => {
    // `--node` only when approve could not tell the approvals apart by owner and scope alone.
    const same = ctx.facts.state.approvals.filter(
      (a) => a.status === 'pending' && a.owner === p.owner && a.scope === p.scope,
    );
    const node = same.length > 1 ? p.nodeId : undefined;
    return { nodeId: p.nodeId, fix: approveCommand(ctx.facts.runId, p.owner, p.scope, 'grant', node) };
  },
  'approval-drift': (p, ctx) => ({
    nodeId: p.nodeId,
    fix: `harness emit ${q(ctx.facts.runId)} approval.requested ${p.nodeId} ${q(`decide again: ${p.path} changed`)} --status needs_approval --approval-owner ${q(p.owner)} --approval-scope ${q(p.scope)}${mode(ctx)}`,
  }),
  'self-heal-unresolved': (_p, ctx) => ({
    nodeId: 'self-heal',
    fix: `harness emit ${q(ctx.facts.runId)} self_heal.pr_opened self-heal ${q('pull request opened')} --self-heal-pr-url ${hole('pull-request-url')}${mode(ctx)}`,
  }),
  'self-heal-unproven': (p) => ({ nodeId: 'self-heal', fix: doc(p.kind) }),
  'artifact-changed': (p, ctx) =>
    p.nodeId === undefined
      ? { fix: doc(p.kind) }
      : {
          nodeId: p.nodeId,
          fix: `harness emit ${q(ctx.facts.runId)} artifact.written ${p.nodeId} ${q(`${p.path} written again`)} --artifact ${q(p.path)}${mode(ctx)}`,
        },
  'artifact-unverifiable': (p) => ({
    ...(p.nodeId === undefined ? {} : { nodeId: p.nodeId }),
    fix: doc(p.kind),
  }),
  'artifact-credential': (p) => ({ fix: doc(p.kind) }),
  proof: (_p, ctx) => ({ nodeId: 'prove', fix: proveCommand(ctx) }),
  'post-proof-mutation': (_p, ctx) => ({ nodeId: 'prove', fix: proveCommand(ctx) }),
  'route-binding': (_p, ctx) => ({
    nodeId: 'route',
    fix: `harness route write ${q(ctx.facts.runId)} --artifact-root ${root(ctx)} --work-type ${hole('work-type')} --goal ${hole('goal')} && ${passCommand(ctx, 'route', ctx.facts.config.artifactByNode.route)}`,
  }),
  'run-packet': (_p, ctx) => ({
    fix: `harness packet write ${q(ctx.facts.runId)} --artifact-root ${root(ctx)}`,
  }),
  review: (_p, ctx) => ({ fix: reviewSign(ctx) }),
  'review-signature': (_p, ctx) => ({ fix: reviewSign(ctx) }),
  'production-readiness': (p) => ({ nodeId: 'production-readiness', fix: doc(p.kind) }),
  'corrective-work': (p) => ({ fix: doc(p.kind) }),
  'self-heal-proposal': (p) => ({ nodeId: 'self-heal', fix: doc(p.kind) }),
  waivers: (p) => ({ fix: doc(p.kind) }),
  'external-validation-runtime': (p) => ({ fix: doc(p.kind) }),
  'secret-scan': (p) => ({ fix: doc(p.kind) }),
  'validators-failed': (p) => ({ fix: doc(p.kind) }),
};

function reviewSign(ctx: FixContext): string {
  return `harness review sign --run ${q(ctx.facts.runId)} --artifact-root ${root(ctx)} --key ${hole('private-key-file')} --key-id ${hole('key-id')} --roster ${hole('roster-file')}`;
}

export function nextStep(problem: Problem, ctx: FixContext): NextStep {
  const step = (FIXES[problem.kind] as (p: Problem, ctx: FixContext) => Step)(problem, ctx);
  return {
    problem: problem.text,
    ...(step.nodeId === undefined ? {} : { nodeId: step.nodeId }),
    fix: step.fix,
  };
}

/** A line with no kind behind it (a step the view cut, a quarantine reason): the page on next steps. */
export const unlisted = (problem: string, anchor?: string): NextStep => ({
  problem,
  fix: `see docs/next-steps.md${anchor === undefined ? '' : `#${anchor}`}`,
});

/**
 * The bridge's completion preview, then what a client's local check found besides (the artifact
 * check of local-artifact-check.ts and the validators' verdict), each with its next step. A
 * bridge problem the local check found too is rendered here, where the artifact root is known; the
 * others keep the step the bridge rendered (a bridge older than `steps` gives none: the docs page).
 */
export function previewAndLocalSteps(
  preview: { problems: readonly string[]; steps?: readonly NextStep[] },
  check: { problems: readonly Problem[]; ctx: FixContext } | null,
): { bridge: NextStep[]; local: NextStep[] } {
  const local = check?.problems ?? [];
  const render = (p: Problem) => nextStep(p, (check as { ctx: FixContext }).ctx);
  const found = new Map(local.map((p) => [p.text, p]));
  // A view's step also names its kind (for the UI's grouping); a step printed here is {problem, nodeId?, fix}.
  const shown = new Map(
    (preview.steps ?? []).map((s) => [
      s.problem,
      { problem: s.problem, ...(s.nodeId === undefined ? {} : { nodeId: s.nodeId }), fix: s.fix },
    ]),
  );
  const bridge = preview.problems.map((text) => {
    const mine = found.get(text);
    return mine ? render(mine) : (shown.get(text) ?? unlisted(text));
  });
  const seen = new Set(preview.problems);
  const more: NextStep[] = [];
  for (const p of local) {
    if (seen.has(p.text)) continue;
    seen.add(p.text);
    more.push(render(p));
  }
  return { bridge, local: more };
}
