import { type TSchema, Type } from '#typebox';
import { ERROR_CODES, type ErrorCode } from '../contract/index.js';

/**
 * What a route's schema tells the OpenAPI document beyond its 2xx bodies: the credentials it
 * takes, the errors it can answer with and the size of body it accepts. Statuses, sentences and
 * the envelope come from the error registry (src/contract/errors.ts); each route lists only which
 * codes it can give, and test/server/openapi-answers.test.ts drives every one of them
 * against a real bridge and holds each answer to the committed document.
 */

/** The credential headers (CONTRACT 4; guard.ts checks them). */
export const SECURITY_SCHEMES = {
  bridgeToken: { type: 'apiKey', in: 'header', name: 'x-harness-bridge-token' },
  humanToken: { type: 'apiKey', in: 'header', name: 'x-harness-human-token' },
} as const;

type Requirement = Partial<Record<keyof typeof SECURITY_SCHEMES, []>>;

export const SECURITY = {
  /** GET /health: no token, or a valid one (a wrong one is 401). */
  optionalAccess: [{}, { bridgeToken: [] }],
  access: [{ bridgeToken: [] }],
  /** An event: the access token, and for a grant or deny the human token too. */
  accessWithHuman: [{ bridgeToken: [] }, { bridgeToken: [], humanToken: [] }],
} as const satisfies Record<string, readonly Requirement[]>;

/**
 * Codes app.ts's onRequest guard can refuse any request with, before its route runs: Host and
 * Origin (the browser defence), shutdown (bridge_busy) and the access token (a tokenless
 * GET /health passes it, a wrong token does not).
 */
export const GUARD_ERRORS = [
  'host_not_allowed',
  'origin_not_allowed',
  'bridge_auth_required',
  'bridge_busy',
] as const satisfies readonly ErrorCode[];

/**
 * Codes every write can also give: the guard's content-type and query checks (a write takes no
 * query), then Fastify's JSON parser and the route's body limit.
 */
export const WRITE_ERRORS = [
  'unsupported_media_type',
  'invalid_query',
  'invalid_json',
  'payload_too_large',
] as const satisfies readonly ErrorCode[];

/** Headers an error answer carries, by code (run-queue.ts sets them). */
const CODE_HEADERS: Partial<Record<ErrorCode, Record<string, TSchema>>> = {
  bridge_busy: {
    'retry-after': Type.Integer({ minimum: 0, description: 'Seconds to wait before retrying.' }),
  },
};

/** CONTRACT 3: the failure envelope, with the codes this answer can carry. */
const envelope = (codes: ErrorCode[]) =>
  Type.Object(
    {
      ok: Type.Literal(false),
      error: Type.Unsafe<ErrorCode>({ type: 'string', enum: codes }),
      message: Type.String({ description: 'One line; no stack, absolute path or credential.' }),
      problems: Type.Array(Type.String(), {
        description: 'Every problem found, when there is a list to give; else empty.',
      }),
    },
    { additionalProperties: false },
  );

/**
 * The error responses of a route that can give `codes`: one per status, its description the
 * registry's sentence for each code, its body the envelope with exactly those codes.
 */
export function errorResponses(codes: readonly ErrorCode[]): Record<number, object> {
  const byStatus = new Map<number, ErrorCode[]>();
  // Registry order, so the document does not depend on how a route spelt its list.
  for (const code of Object.keys(ERROR_CODES) as ErrorCode[]) {
    if (!codes.includes(code)) continue;
    const { status } = ERROR_CODES[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: Record<number, object> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    const headers = Object.assign({}, ...list.map((code) => CODE_HEADERS[code] ?? {}));
    responses[status] = {
      description: list.map((code) => `\`${code}\`: ${ERROR_CODES[code].doc}`).join('\n\n'),
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
      content: { 'application/json': { schema: envelope(list) } },
    };
  }
  return responses;
}

/** A write's body limit, for the route's `bodyLimit` and its document alike. */
export function bodyLimitDoc(bytes: number): { description: string; 'x-harness-body-max-bytes': number } {
  return {
    description: `The body is JSON (\`content-type: application/json\`) of at most ${bytes} bytes (${bytes / 1024} KiB); a larger one is refused before it is parsed (413 \`payload_too_large\`).`,
    'x-harness-body-max-bytes': bytes,
  };
}

/**
 * Codes no operation gives: the router's answer to a path or method no route has (app.ts), and
 * Node's HTTP parser refusals (client-error.ts), which reach no route at all.
 */
export const OUTSIDE_OPERATIONS = [
  'not_found',
  'malformed_request',
  'request_timeout',
  'request_headers_too_large',
] as const satisfies readonly ErrorCode[];

/** The document's own description: the envelope, and the answers outside every operation. */
export function apiDescription(): string {
  const outside = OUTSIDE_OPERATIONS.map((code) => `${ERROR_CODES[code].status} \`${code}\``).join(', ');
  return [
    'Local run bridge API (loopback only).',
    'Every failure is `{ok: false, error, message, problems}`; each operation lists, per status, the codes it can answer with.',
    `Requests no operation receives are answered in the same envelope: ${outside}; the last three close the connection.`,
  ].join(' ');
}
