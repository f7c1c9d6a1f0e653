import { type Static, Type } from '#typebox';
import { artifactPathProblems } from './artifact-path.js';
import {
  type EventSource,
  type EventType,
  type NodeState,
  type RunMode,
  SOURCES_BY_MODE,
  TActor,
  TEventSource,
  TEventType,
  TNodeId,
  TNodeState,
  TRunMode,
  TStatus,
} from './enums.js';
import { EVENT_ID_MAX, PATH_FIELD_MAX, RUN_ID_PATTERN_SOURCE, TEXT_FIELD_MAX } from './limits.js';
import { SELF_HEAL_PROPOSAL_PATH } from './nodes.js';

const Text = (description: string) => Type.String({ maxLength: TEXT_FIELD_MAX, description });
const PathText = (description: string) =>
  Type.String({ minLength: 1, maxLength: PATH_FIELD_MAX, description });

/** The RunEvent body of POST /runs/:id/events (SPEC "Event (RunEvent)"). Unknown fields are rejected. */
export const RunEventSchema = Type.Object(
  {
    id: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: EVENT_ID_MAX,
        description: 'Idempotency key; generated if omitted',
      }),
    ),
    type: TEventType,
    ts: Type.Optional(
      Type.String({ format: 'date-time', maxLength: 64, description: 'generated if omitted' }),
    ),
    actor: TActor,
    runMode: TRunMode,
    eventSource: TEventSource,
    nodeId: TNodeId,
    nodeState: Type.Optional(TNodeState),
    artifact: Type.Optional(PathText('artifact path relative to the artifact root')),
    artifactRoot: Type.Optional(PathText('absolute artifact root; first event only, immutable once set')),
    adapterPath: Type.Optional(PathText('project adapter path; first event only')),
    message: Type.String({ minLength: 1, maxLength: TEXT_FIELD_MAX }),
    status: TStatus,
    skipReason: Type.Optional(Text('required when the node is skipped')),
    failureReason: Type.Optional(Text('required when the node failed')),
    recoveryPath: Type.Optional(Text('required when the node failed')),
    approvalOwner: Type.Optional(Text('required when the node needs approval')),
    approvalScope: Type.Optional(Text('required when the node needs approval')),
    selfHealPrUrl: Type.Optional(
      Text('pull request URL, or the local proposal reference self_heal/pr.json (pr_proposed only)'),
    ),
  },
  { additionalProperties: false, $id: 'RunEvent', title: 'RunEvent' },
);
export type RunEvent = Static<typeof RunEventSchema>;

/** The POST /runs body (CONTRACT section 4). */
export const CreateRunSchema = Type.Object(
  {
    id: Type.String({ pattern: RUN_ID_PATTERN_SOURCE, description: 'canonical run ID' }),
    title: Type.Optional(Text('title')),
    task: Type.Optional(Text('task')),
    repo: Type.Optional(Text('repository')),
    branch: Type.Optional(Text('branch')),
    lane: Type.Optional(Text('lane')),
    agent: Type.Optional(Text('agent')),
    risk: Type.Optional(Text('risk')),
    runMode: Type.Optional(TRunMode),
    eventSource: Type.Optional(TEventSource),
    artifactRoot: Type.Optional(PathText('absolute artifact root')),
    adapterPath: Type.Optional(PathText('project adapter path')),
  },
  { additionalProperties: false, $id: 'CreateRun', title: 'CreateRun' },
);
export type CreateRunBody = Static<typeof CreateRunSchema>;
export const CREATE_RUN_METADATA = ['title', 'task', 'repo', 'branch', 'lane', 'agent', 'risk'] as const;

/** An event as the journal stores it: id and ts always present. */
export type StoredEvent = RunEvent & { id: string; ts: string };

/** The node state each event type puts its node in (CONTRACT 5), unless it names a `nodeState`. */
const NODE_STATE_BY_TYPE: Partial<Record<EventType, NodeState>> = {
  'node.entered': 'active',
  'node.skipped': 'skipped',
  'node.failed': 'failed',
  'approval.requested': 'needs_approval',
  'approval.granted': 'active',
  'approval.denied': 'failed',
};

/** The state an event leaves its node in, or undefined when it does not change it. */
export function nodeStateSetBy(event: Pick<RunEvent, 'type' | 'nodeState'>): NodeState | undefined {
  return event.nodeState ?? NODE_STATE_BY_TYPE[event.type];
}

/**
 * Rules the schema cannot say: conditional fields (SPEC "States and transitions"), the mode/source
 * table, and per-type requirements. Returns every problem, never just the first.
 */
export function eventRuleProblems(event: RunEvent): string[] {
  const problems: string[] = [];
  const present = (v: string | undefined) => typeof v === 'string' && v.trim().length > 0;
  // A state the event puts the node in (nodeStateSetBy: a denial fails its node), or claims by its
  // status or type.
  const sets = nodeStateSetBy(event);
  const claims = (state: string, type: string) =>
    event.status === state || sets === state || event.type === type;

  if (claims('skipped', 'node.skipped') && !present(event.skipReason))
    problems.push('skipReason is required when the node is skipped');
  if (claims('failed', 'node.failed')) {
    if (!present(event.failureReason)) problems.push('failureReason is required when the node failed');
    if (!present(event.recoveryPath)) problems.push('recoveryPath is required when the node failed');
  }
  if (claims('needs_approval', 'approval.requested')) {
    if (!present(event.approvalOwner))
      problems.push('approvalOwner is required when the node needs approval');
    if (!present(event.approvalScope))
      problems.push('approvalScope is required when the node needs approval');
  }
  problems.push(...modeSourceProblems(event.runMode, event.eventSource));
  switch (event.type) {
    case 'approval.requested':
      if (event.status !== 'needs_approval')
        problems.push('approval.requested requires status needs_approval');
      break;
    case 'approval.granted':
    case 'approval.denied':
      if (event.actor !== 'human') problems.push(`${event.type} requires actor human`);
      if (!present(event.approvalOwner) || !present(event.approvalScope)) {
        problems.push(`${event.type} requires approvalOwner and approvalScope naming the pending approval`);
      }
      break;
    case 'artifact.written':
      if (!present(event.artifact)) problems.push('artifact.written requires artifact');
      break;
    case 'self_heal.pr_opened':
      if (!isPullRequestUrl(event.selfHealPrUrl)) {
        problems.push('self_heal.pr_opened requires selfHealPrUrl, an https URL of a pull or merge request');
      }
      break;
    case 'self_heal.pr_proposed':
      problems.push(...proposalProblems(event));
      break;
    default:
      break;
  }
  // A non-string artifact is the schema's problem; the rules above are still reported with it.
  if (typeof event.artifact === 'string') problems.push(...artifactPathProblems(event.artifact));
  return problems;
}

/** The seed's mode/source table, for events and for POST /runs. */
export function modeSourceProblems(runMode: RunMode, eventSource: EventSource): string[] {
  // An unknown mode (the schema refuses it) must not throw: that would hide every other rule's
  // problem from the event's answer.
  if (!Object.hasOwn(SOURCES_BY_MODE, runMode)) return [];
  if (SOURCES_BY_MODE[runMode].includes(eventSource)) return [];
  return [
    `eventSource ${eventSource} is not allowed with runMode ${runMode} (allowed: ${SOURCES_BY_MODE[runMode].join(', ')})`,
  ];
}

/**
 * SPEC field table: a pr_proposed's selfHealPrUrl is a pull request URL or the local proposal
 * reference `self_heal/pr.json`; the proposal may also be named by `artifact`. A local proposal,
 * however named, is verified and claimed at append. Both names given must agree; any other
 * selfHealPrUrl is refused, so nothing unverifiable ever stands for a resolution.
 */
function proposalProblems(event: RunEvent): string[] {
  const url = event.selfHealPrUrl;
  if (url === undefined) {
    return event.artifact === undefined
      ? [
          `self_heal.pr_proposed requires selfHealPrUrl (a pull or merge request URL, or ${SELF_HEAL_PROPOSAL_PATH}) or artifact ${SELF_HEAL_PROPOSAL_PATH}`,
        ]
      : [];
  }
  if (url === SELF_HEAL_PROPOSAL_PATH) {
    return event.artifact === undefined || event.artifact === url
      ? []
      : [`selfHealPrUrl ${SELF_HEAL_PROPOSAL_PATH} and artifact name different proposals`];
  }
  return isPullRequestUrl(url)
    ? []
    : [
        `self_heal.pr_proposed selfHealPrUrl must be an https pull or merge request URL or ${SELF_HEAL_PROPOSAL_PATH}`,
      ];
}

/** The local proposal a pr_proposed names (by `artifact` or selfHealPrUrl), if any. */
export function proposalArtifact(event: RunEvent): string | undefined {
  if (event.artifact !== undefined) return event.artifact;
  return event.selfHealPrUrl === SELF_HEAL_PROPOSAL_PATH ? SELF_HEAL_PROPOSAL_PATH : undefined;
}

/** An https URL whose path names a pull request (GitHub, Gitea) or merge request (GitLab). */
export function isPullRequestUrl(value: string | undefined): boolean {
  if (value === undefined) return false;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.protocol !== 'https:' || url.username !== '' || url.password !== '') return false;
  return /\/(pull|pulls|merge_requests)\/\d+(\/|$)/.test(url.pathname);
}
