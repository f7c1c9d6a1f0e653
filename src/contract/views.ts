import { type Static, Type } from '#typebox';
import {
  TActor,
  TEventSource,
  TEventType,
  TNodeId,
  TNodeState,
  TRunMode,
  TRunStatus,
  TStatus,
} from './enums.js';

/** Response shapes of the read endpoints (CONTRACT section 4); the OpenAPI document is built from them. */
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

/** A finish-line problem and what clears it (src/validators/next-step.ts). */
export const NextStep = Type.Object(
  {
    problem: Type.String(),
    nodeId: Type.Optional(TNodeId),
    fix: Type.String({
      description: "a command with the run's own IDs and paths, or the docs section that explains",
    }),
  },
  { additionalProperties: false },
);

/** A completion-preview step: a next step and the kind of its problem, the UI's grouping key. */
export const PreviewStep = Type.Object(
  {
    ...NextStep.properties,
    kind: Type.String({
      description:
        'the kind of problem (the anchor of its section in docs/next-steps.md), e.g. node-not-passed',
    }),
  },
  { additionalProperties: false },
);

export const ArtifactClaimView = Type.Object({
  path: Type.String(),
  sha256: Type.String(),
  size: Type.Integer(),
  mtimeMs: Type.Number(),
});

export const EventView = Type.Object(
  {
    seq: Type.Integer({ minimum: 0 }),
    id: Type.String(),
    type: TEventType,
    ts: Type.String(),
    actor: TActor,
    runMode: TRunMode,
    eventSource: TEventSource,
    nodeId: TNodeId,
    nodeState: Type.Optional(TNodeState),
    artifact: Type.Optional(Type.String()),
    message: Type.String(),
    status: TStatus,
    skipReason: Type.Optional(Type.String()),
    failureReason: Type.Optional(Type.String()),
    recoveryPath: Type.Optional(Type.String()),
    approvalOwner: Type.Optional(Type.String()),
    approvalScope: Type.Optional(Type.String()),
    selfHealPrUrl: Type.Optional(Type.String()),
    artifactRootSet: Type.Optional(Type.Boolean({ description: 'the first event sealed an artifactRoot' })),
    adapterPathSet: Type.Optional(Type.Boolean({ description: 'the first event sealed an adapter' })),
    claim: Type.Optional(ArtifactClaimView),
  },
  { additionalProperties: false },
);
export type EventViewT = Static<typeof EventView>;

export const RunSummaryView = Type.Object(
  {
    id: Type.String(),
    title: Nullable(Type.String()),
    status: TRunStatus,
    runMode: Nullable(TRunMode),
    commissioned: Type.Boolean(),
    createdAt: Type.String(),
    updatedAt: Type.String(),
    currentNodeId: Nullable(TNodeId),
    eventCount: Type.Integer(),
    eventsTruncated: Type.Boolean({ description: 'the body does not carry every event of the run' }),
    pendingApprovals: Type.Integer(),
    reverificationDue: Type.Boolean({
      description:
        'a completed run listed as its record says, not re-verified by this answer: its artifacts and finish line are checked again when the run itself is read (GET /runs/:id), which quarantines it if its evidence drifted',
    }),
  },
  { additionalProperties: false },
);
export type RunSummary = Static<typeof RunSummaryView>;

export const NodeView = Type.Object(
  {
    id: TNodeId,
    state: TNodeState,
    required: Type.Boolean(),
    artifact: Nullable(Type.String()),
    artifactVerified: Type.Boolean(),
    skipReason: Nullable(Type.String()),
    failureReason: Nullable(Type.String()),
    recoveryPath: Nullable(Type.String()),
    updatedSeq: Nullable(Type.Integer()),
    approvalDrift: Type.Array(
      Type.Object(
        {
          path: Type.String(),
          decision: Type.Union([Type.Literal('granted'), Type.Literal('denied')]),
          decidedSeq: Type.Integer(),
          approvedSha256: Type.String(),
          currentSha256: Type.String(),
          currentSeq: Type.Integer(),
          decisions: Type.Integer({
            minimum: 1,
            description: 'standing decisions of the node on this artifact that drifted',
          }),
        },
        { additionalProperties: false },
      ),
      {
        description:
          "artifacts of the node claimed again with other bytes after a standing grant or denial of the node's approvals: one per artifact, with the newest such decision; run.completed is refused until the approval is requested and decided again",
      },
    ),
  },
  { additionalProperties: false },
);

export const ApprovalView = Type.Object(
  {
    nodeId: TNodeId,
    owner: Type.String(),
    scope: Type.String(),
    status: Type.Union([Type.Literal('pending'), Type.Literal('granted'), Type.Literal('denied')]),
    requestedSeq: Type.Integer(),
    requestedAt: Type.String(),
    decidedSeq: Nullable(Type.Integer()),
    decidedAt: Nullable(Type.String()),
    approved: Type.Optional(
      Type.Record(Type.String(), Type.String(), {
        description:
          'a decision: the sha256 of each artifact its node had claimed when it was decided, by path (absent on decisions recorded before 0.8.0 bound them)',
      }),
    ),
  },
  { additionalProperties: false },
);

export const ArtifactView = Type.Object(
  {
    path: Type.String(),
    nodeId: TNodeId,
    sha256: Type.String(),
    size: Type.Integer(),
    mtimeMs: Type.Number(),
    seq: Type.Integer(),
    ts: Type.String(),
    outcome: Type.Union([Type.Literal('verified'), Type.Literal('failed'), Type.Literal('skipped')], {
      description: 'what the last artifact.written of this path reported; failed blocks completion',
    }),
    failureReason: Nullable(Type.String()),
    recoveryPath: Nullable(Type.String()),
    skipReason: Nullable(Type.String()),
  },
  { additionalProperties: false },
);

export const EventPageView = Type.Object(
  {
    offset: Type.Integer(),
    limit: Type.Integer(),
    returned: Type.Integer(),
    total: Type.Integer(),
    previousCursor: Nullable(Type.String()),
    nextCursor: Nullable(Type.String()),
    truncated: Type.Boolean(),
    byteLimited: Type.Boolean(),
  },
  { additionalProperties: false },
);
export type EventPage = Static<typeof EventPageView>;

export const RunView = Type.Object(
  {
    ...RunSummaryView.properties,
    metadata: Type.Record(Type.String(), Type.String()),
    artifactRootSet: Type.Boolean(),
    adapter: Nullable(
      Type.Object({
        rootKind: Type.String(),
        sha256: Type.String(),
        finishLineAssurance: Type.Boolean(),
        ignoredMayChange: Type.Optional(Type.Array(Type.String())),
      }),
    ),
    trustPin: Type.String(),
    nodes: Type.Array(NodeView),
    approvals: Type.Array(ApprovalView, {
      description:
        'request order; every pending approval (oldest first) and then the newest decided ones, while they fit in 256 KiB',
    }),
    approvalsOmitted: Type.Integer({
      minimum: 0,
      description: 'approvals of the run left out of `approvals` to keep the response under 1 MiB',
    }),
    artifacts: Type.Array(ArtifactView),
    textsShortened: Type.Integer({
      minimum: 0,
      description:
        'node and artifact texts (skipReason, failureReason, recoveryPath) shortened to keep the response under 1 MiB: together they are cut to 256 KiB, the longest first, each ending in `… [N more bytes not shown]`; the event that set a text holds it whole',
    }),
    selfHeal: Type.Object({
      detected: Type.Boolean(),
      detectedSeq: Nullable(Type.Integer()),
      resolved: Type.Boolean(),
      resolvedSeq: Nullable(Type.Integer()),
      prUrl: Nullable(Type.String()),
      artifact: Nullable(Type.String()),
    }),
    completionPreview: Type.Object({
      ready: Type.Boolean(),
      problems: Type.Array(Type.String()),
      steps: Type.Array(PreviewStep, {
        description:
          'each problem with the command or document that clears it (docs/next-steps.md); the first that fit in 128 KiB',
      }),
    }),
    quarantine: Nullable(Type.Object({ reasons: Type.Array(Type.String()), since: Type.String() })),
  },
  { additionalProperties: false },
);
export type RunViewT = Static<typeof RunView>;

/**
 * A quarantined run as reads answer it: the summary (nothing derived from the record it no longer
 * trusts: no title, mode, node or counts) and the quarantine's reasons.
 */
export const QuarantinedRunView = Type.Object(
  {
    ...RunSummaryView.properties,
    status: Type.Literal('quarantined'),
    quarantine: Type.Object({ reasons: Type.Array(Type.String()), since: Type.String() }),
  },
  { additionalProperties: false },
);

/** The page of events `GET /runs/:id` carries inside its `run`, beside the view (CONTRACT 4). */
const EventPageParts = { events: Type.Array(EventView), eventPage: EventPageView };

/** `run` of `GET /runs/:id`: the full view with one page of its events. */
export const RunReadView = Type.Object(
  { ...RunView.properties, ...EventPageParts },
  { additionalProperties: false },
);
export type RunReadT = Static<typeof RunReadView>;

/** `run` of `GET /runs/:id` for a quarantined run: no event of its untrusted journal is served. */
export const QuarantinedRunReadView = Type.Object(
  { ...QuarantinedRunView.properties, ...EventPageParts },
  { additionalProperties: false },
);
export type QuarantinedRunReadT = Static<typeof QuarantinedRunReadView>;
