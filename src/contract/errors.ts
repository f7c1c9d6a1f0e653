/**
 * The one registry of HTTP error codes (CONTRACT section 3). Every code has its status and a
 * sentence for its row in docs/api.md; test/build/generated-docs.test.ts proves both stay in step.
 */
export const ERROR_CODES = {
  invalid_json: { status: 400, doc: 'The body is not valid JSON. Nothing from it is echoed.' },
  event_contract_violation: {
    status: 400,
    doc: 'The event breaks the closed event contract; `problems` lists every violation at once.',
  },
  run_creation_contract_violation: {
    status: 400,
    doc: 'The POST /runs body breaks its contract (a missing or non-string `id` included).',
  },
  invalid_run_id: {
    status: 400,
    doc: 'The run ID, in the path or as the string `id` of a POST /runs body, is not canonical (`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`).',
  },
  invalid_query: {
    status: 400,
    doc: 'A query parameter is unknown, repeated, not plain decimal digits, or out of range.',
  },
  client_supplied_human_token_rejected: {
    status: 400,
    doc: 'The body (or the run ID in the path) names or carries a credential; the human token travels only in its header.',
  },
  artifact_verification_failed: {
    status: 400,
    doc: 'The artifact is missing, not a regular file, reached through a link, or outside the artifact root; or it is larger than the artifact ceiling (HARNESS_ARTIFACT_MAX_BYTES, by its size, unread), or hashing it took longer than HARNESS_REHASH_TIMEOUT_MS. Also a run export with withArtifacts whose claimed artifact cannot be read, or changed since its claim.',
  },
  adapter_policy_violation: {
    status: 400,
    doc: "The adapter path is outside the allowed roots, reached through a link, or not a valid adapter; or the adapter is weaker than the repository's committed one (it lacks the finishLineAssurance that one requires).",
  },
  bridge_auth_required: {
    status: 401,
    doc: 'The access token header is missing or wrong (also a grant/deny carrying only the human token).',
  },
  human_approval_required: { status: 403, doc: 'A grant or deny lacks a valid human approval token.' },
  origin_not_allowed: { status: 403, doc: 'The request carries a non-loopback Origin.' },
  host_not_allowed: { status: 403, doc: "The Host header is not the bridge's loopback host and port." },
  run_not_found: { status: 404, doc: 'No run has this ID.' },
  not_found: { status: 404, doc: 'No such route.' },
  run_already_exists: {
    status: 409,
    doc: 'POST /runs repeated with a field that differs from the stored run.',
  },
  event_state_violation: { status: 409, doc: "The event is well-formed but not allowed in the run's state." },
  event_id_conflict: { status: 409, doc: 'An event with this id was stored with other content.' },
  finish_line_blocked: {
    status: 409,
    doc: 'run.completed was refused; `problems` lists the failing checks and a run.blocked event records them.',
  },
  run_closed: { status: 409, doc: 'The run is completed and accepts no more events.' },
  run_quarantined: { status: 409, doc: 'The run failed authentication or drifted; it accepts no writes.' },
  run_history_full: {
    status: 409,
    doc: 'The run reached HARNESS_MAX_EVENTS_PER_RUN, its journal byte ceiling (4 GiB) or its approval ceiling (1 MiB of approval owners, scopes and the artifact digests their decisions seal); continue under a new run ID. On a run creation (POST /runs or a first event): the data directory holds its maximum of 100000 runs; archive it and continue with a fresh one.',
  },
  payload_too_large: {
    status: 413,
    doc: 'The body is larger than the route allows (declared or streamed), or the event as it would be stored (canonical JSON, id and ts filled in) exceeds 16 KiB; or a run bundle (GET /runs/:id/export) would exceed its 64 MiB cap.',
  },
  unsupported_media_type: { status: 415, doc: 'A write whose content-type is not application/json.' },
  bridge_busy: {
    status: 503,
    doc: 'A bounded queue is full, or the bridge is shutting down (also when it stops because a write or sync of its storage failed: an event it could not make durable gets this answer and was not acknowledged); retry after the `retry-after` seconds.',
  },
  malformed_request: {
    status: 400,
    doc: 'The request is not well-formed HTTP/1.1 (its request line or a header, or more body bytes than its Content-Length say); the connection is closed.',
  },
  request_timeout: {
    status: 408,
    doc: "The request did not arrive in full within the server's request timeout; the connection is closed.",
  },
  request_headers_too_large: {
    status: 431,
    doc: "The request's header section is larger than the server accepts (16 KiB); the connection is closed.",
  },
  internal_error: {
    status: 500,
    doc: 'An unexpected failure; details are in the bridge log, never the body.',
  },
} as const satisfies Record<string, { status: number; doc: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** A failure with a stable code from the closed registry; the HTTP layer renders the envelope. */
export class BridgeError extends Error {
  readonly code: ErrorCode;
  readonly problems: readonly string[];
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    code: ErrorCode,
    message: string,
    problems: readonly string[] = [],
    headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'BridgeError';
    this.code = code;
    this.problems = problems;
    this.headers = headers;
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }
}

export interface ErrorBody {
  ok: false;
  error: ErrorCode;
  message: string;
  problems: string[];
}

/**
 * CONTRACT 3: the message is one line, even where it quotes text a client chose (an adapter path,
 * a node ID read from an adapter): a line break or other control character is shown as an escape.
 */
const LINE_BREAKING = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

/** A character shown as its code point (`\u{a}`), where printing it would move or hide text. */
export const visibleEscape = (c: string): string => `\\u{${c.charCodeAt(0).toString(16)}}`;

export function errorBody(err: BridgeError): ErrorBody {
  const message = err.message.replace(LINE_BREAKING, visibleEscape);
  return { ok: false, error: err.code, message, problems: [...err.problems] };
}
