import { Type } from '#typebox';

/** The closed vocabularies of the event contract (SPEC "Event", "Node IDs", "Events"). */
export const EVENT_TYPES = [
  'run.created',
  'run.mode_set',
  'agent.connected',
  'node.entered',
  'node.skipped',
  'node.failed',
  'gate.fired',
  'artifact.written',
  'approval.requested',
  'approval.granted',
  'approval.denied',
  'run.blocked',
  'run.completed',
  'self_heal.detected',
  'self_heal.pr_opened',
  'self_heal.pr_proposed',
] as const;

/** The 14 base nodes in flow order. Adapter-defined nodes are a future extension. */
export const NODE_IDS = [
  'intake',
  'route',
  'code-intelligence',
  'design-anchors',
  'system-design',
  'production-readiness',
  'cloud-platform',
  'implement',
  'redzone',
  'qa-break-it',
  'prove',
  'live-smoke',
  'self-heal',
  'handoff',
] as const;

export const ACTORS = ['runtime-a', 'runtime-b', 'runtime-c', 'human', 'harness', 'system'] as const;
export const STATUSES = ['ok', 'warn', 'blocked', 'skipped', 'failed', 'needs_approval', 'passed'] as const;
export const RUN_MODES = ['blueprint', 'live', 'replay'] as const;
export const EVENT_SOURCES = [
  'static-blueprint',
  'bridge',
  'mcp',
  'api',
  'watched-artifact',
  'local-jsonl',
  'database',
  'run-packet',
  'browser-local',
] as const;
export const NODE_STATES = ['passed', 'active', 'failed', 'skipped', 'pending', 'needs_approval'] as const;
export const RUN_STATUSES = ['running', 'blocked', 'completed', 'quarantined'] as const;

export type EventType = (typeof EVENT_TYPES)[number];
export type NodeId = (typeof NODE_IDS)[number];
export type Actor = (typeof ACTORS)[number];
export type Status = (typeof STATUSES)[number];
export type RunMode = (typeof RUN_MODES)[number];
export type EventSource = (typeof EVENT_SOURCES)[number];
export type NodeState = (typeof NODE_STATES)[number];
export type RunStatus = (typeof RUN_STATUSES)[number];

/** SPEC "What the service does" 9: the event sources each presentation mode admits. */
export const SOURCES_BY_MODE: Readonly<Record<RunMode, readonly EventSource[]>> = {
  blueprint: ['static-blueprint'],
  live: ['bridge', 'mcp', 'api', 'watched-artifact', 'browser-local'],
  replay: ['local-jsonl', 'database', 'run-packet'],
};

/** The one mode that admits `source`: no source belongs to two modes. */
export function modeOfSource(source: EventSource): RunMode {
  return (Object.keys(SOURCES_BY_MODE) as RunMode[]).find((m) => SOURCES_BY_MODE[m].includes(source))!;
}

export const TEventType = Type.Enum(EVENT_TYPES);
export const TNodeId = Type.Enum(NODE_IDS);
export const TActor = Type.Enum(ACTORS);
export const TStatus = Type.Enum(STATUSES);
export const TRunMode = Type.Enum(RUN_MODES);
export const TEventSource = Type.Enum(EVENT_SOURCES);
export const TNodeState = Type.Enum(NODE_STATES);
export const TRunStatus = Type.Enum(RUN_STATUSES);

export function isNodeId(value: string): value is NodeId {
  return (NODE_IDS as readonly string[]).includes(value);
}
