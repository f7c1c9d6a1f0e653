import type { NodeId } from '../contract/index.js';

/**
 * A finish-line problem as it is found: its text (the words every caller shows, the 409 and the
 * run.blocked record carry) and a kind with the facts that name what clears it, so the next step
 * (next-step.ts) is computed from structure, never read back out of the wording.
 */
export type Problem =
  | { kind: 'node-not-passed'; text: string; nodeId: NodeId }
  | { kind: 'node-skipped-without-reason'; text: string; nodeId: NodeId }
  | { kind: 'artifact-node-failed'; text: string; nodeId: NodeId; path: string }
  | { kind: 'artifact-not-verified'; text: string; nodeId: NodeId; path: string }
  | { kind: 'artifact-failed'; text: string; nodeId: NodeId; path: string }
  | { kind: 'artifact-skipped-without-reason'; text: string; nodeId: NodeId; path: string }
  | { kind: 'approval-pending'; text: string; nodeId: NodeId; owner: string; scope: string }
  | { kind: 'approval-drift'; text: string; nodeId: NodeId; owner: string; scope: string; path: string }
  | { kind: 'self-heal-unresolved' | 'self-heal-unproven'; text: string }
  /** From a client's artifact check (local-artifact-check.ts): the claim's node when one claimed it. */
  | { kind: 'artifact-changed' | 'artifact-unverifiable'; text: string; path: string; nodeId?: NodeId }
  | { kind: 'artifact-credential'; text: string; path: string }
  /** A content rule's problem, named after the rule (finish-line.ts), or the secret scan's. */
  | { kind: ContentKind; text: string }
  /** The validator child timed out, crashed or answered nonsense (runner.ts). */
  | { kind: 'validators-failed'; text: string };

/** The content rules and the secret scan, by the names finish-line.ts gives them. */
export const CONTENT_KINDS = [
  'self-heal-proposal',
  'corrective-work',
  'proof',
  'production-readiness',
  'route-binding',
  'review',
  'review-signature',
  'run-packet',
  'waivers',
  'external-validation-runtime',
  'post-proof-mutation',
  'secret-scan',
] as const;
export type ContentKind = (typeof CONTENT_KINDS)[number];

export type ProblemKind = Problem['kind'];

/** Every kind, for a reader that takes problems from another process (runner.ts). */
export const PROBLEM_KINDS: readonly ProblemKind[] = [
  'node-not-passed',
  'node-skipped-without-reason',
  'artifact-node-failed',
  'artifact-not-verified',
  'artifact-failed',
  'artifact-skipped-without-reason',
  'approval-pending',
  'approval-drift',
  'self-heal-unresolved',
  'self-heal-unproven',
  'artifact-changed',
  'artifact-unverifiable',
  'artifact-credential',
  ...CONTENT_KINDS,
  'validators-failed',
];

export const texts = (problems: readonly Problem[]): string[] => problems.map((p) => p.text);
