import { type TObject, type TProperties, Type } from '#typebox';
import {
  CreateRunSchema,
  PATH_FIELD_MAX,
  RUN_ID_PATTERN_SOURCE,
  RunEventSchema,
  TActor,
  TEventSource,
  TNodeId,
  TRunMode,
} from '../contract/index.js';

/**
 * Tool input schemas, derived from the contract's TypeBox schemas (src/contract/event.ts) so the
 * tools accept exactly the field names, vocabularies and ceilings of the HTTP bodies, plus `runId`
 * (the path parameter of the HTTP API). They are plain JSON Schema: the MCP client is sent them
 * as they are. Top-level `oneOf`/`anyOf` are avoided on purpose: several clients refuse them.
 */

/** Artifacts written through the tool server are capped (MCP messages are held in memory). */
export const ARTIFACT_WRITE_MAX_BYTES = 8 * 1024 * 1024;

/**
 * The largest message the stdio transport reads: an 8 MiB artifact as base64 (about 11.2 MB) with
 * its envelope. The SDK's default, 10 MiB, closed the session on such a call instead of answering it.
 */
export const MCP_MESSAGE_MAX_BYTES = 16 * 1024 * 1024;

const RunId = Type.String({
  pattern: RUN_ID_PATTERN_SOURCE,
  description: 'canonical run ID (^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$)',
});

const strict = <P extends TProperties>(properties: P): TObject<P> =>
  Type.Object(properties, { additionalProperties: false });

function omit<P extends TProperties, K extends keyof P & string>(props: P, keys: readonly K[]): Omit<P, K> {
  const out: TProperties = {};
  for (const [k, v] of Object.entries(props)) if (!(keys as readonly string[]).includes(k)) out[k] = v;
  return out as Omit<P, K>;
}

const E = RunEventSchema.properties;
/** The required fields `approvalOwner`/`approvalScope`, with the contract's ceilings. */
const ApprovalFields = Type.Required(
  Type.Pick(RunEventSchema, ['approvalOwner', 'approvalScope']),
).properties;

/** Mode and source default to a live run reported by the tool server. */
const ModeAndSource = {
  runMode: Type.Optional(Type.Enum(TRunMode.enum, { description: 'default live' })),
  eventSource: Type.Optional(
    Type.Enum(TEventSource.enum, {
      description:
        'default: mcp for runMode live (the only mode that allows it), local-jsonl for replay, static-blueprint for blueprint',
    }),
  ),
};

export const StartRunInput = strict({ runId: RunId, ...omit(CreateRunSchema.properties, ['id']) });

export const EmitEventInput = strict({ runId: RunId, ...E, ...ModeAndSource });

export const RequestApprovalInput = strict({
  runId: RunId,
  nodeId: TNodeId,
  ...ApprovalFields,
  message: E.message,
  actor: TActor,
  id: E.id,
  ts: E.ts,
  ...ModeAndSource,
});

const RelativePath = Type.String({
  minLength: 1,
  maxLength: PATH_FIELD_MAX,
  description:
    "POSIX path relative to the artifact root: no leading /, no '..', '.' or empty segment, no backslash or NUL; no component may be a link",
});

const ArtifactRoot = Type.Optional(
  Type.String({
    minLength: 1,
    maxLength: PATH_FIELD_MAX,
    description:
      "absolute artifact root of the run; optional once this session has seen it on start_run or the run's first emit_event. The bridge cross-checks it against the sealed root",
  }),
);

export const WriteArtifactInput = strict({
  runId: RunId,
  nodeId: TNodeId,
  path: RelativePath,
  content: Type.Optional(Type.String({ description: 'UTF-8 text content (give this or contentBase64)' })),
  contentBase64: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9+/]*={0,2}$',
      description: 'base64 content for binary files (give this or content)',
    }),
  ),
  artifactRoot: ArtifactRoot,
  emit: Type.Optional(
    Type.Boolean({
      description:
        "default true: emit artifact.written for nodeId, so path must be the node's configured artifact. false writes a supporting file (rca/rca.json, run/packet.json, review/review.json, self_heal/pr.json) without an event",
    }),
  ),
  actor: Type.Optional(Type.Enum(TActor.enum, { description: 'default harness' })),
  message: Type.Optional(E.message),
  id: E.id,
  ...ModeAndSource,
});

export const FinishLineCheckInput = strict({ runId: RunId, artifactRoot: ArtifactRoot });
