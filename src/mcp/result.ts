import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { BridgeResponse } from '../cli/http.js';
import type { ErrorCode } from '../contract/index.js';

/**
 * Tool results. Every failure, the bridge's or the tool server's own, is a tool result with
 * `isError: true` whose one text content is the contract's error envelope as JSON
 * (`{ok:false, error, message, problems}`), so an agent reads the code and every problem at
 * once and can correct itself. Protocol errors are kept for protocol faults only.
 */

/** Codes the tool server reports itself; the bridge's codes are in src/contract/errors.ts. */
export const MCP_ERROR_CODES = {
  invalid_tool_input: 'The arguments do not match the tool input schema; `problems` lists every mismatch.',
  unknown_tool: 'No tool has this name.',
  artifact_root_unknown:
    'The session has not seen the run artifact root: pass `artifactRoot` (the bridge cross-checks it).',
  artifact_write_refused:
    'The path breaks the artifact path rules or meets a link or non-directory; nothing was written.',
  artifact_claim_mismatch:
    'The bridge recorded bytes other than those written: the file changed after the write.',
  bridge_unreachable: 'The bridge did not answer: it is not running or HARNESS_BRIDGE_URL is wrong.',
  bridge_timeout:
    'The bridge took the request and gave no answer within HARNESS_CLIENT_TIMEOUT_MS: it may have stored the event; call again with the same `id`, which it answers as a duplicate if it did.',
  internal_error: 'An unexpected failure in the tool server; details are on its stderr.',
} as const;
export type McpErrorCode = keyof typeof MCP_ERROR_CODES;

export interface ErrorEnvelope {
  ok: false;
  error: string;
  message: string;
  problems: string[];
  httpStatus?: number;
}

const text = (value: unknown): CallToolResult['content'] => [
  { type: 'text', text: JSON.stringify(value, null, 2) },
];

export function success(body: Record<string, unknown>): CallToolResult {
  return { content: text({ ok: true, ...body }) };
}

/** A refusal by the tool server; a contract code is used where it means the same thing. */
export function failure(
  code: McpErrorCode | ErrorCode,
  message: string,
  problems: readonly string[] = [],
): CallToolResult {
  const envelope: ErrorEnvelope = { ok: false, error: code, message, problems: [...problems] };
  return { content: text(envelope), isError: true };
}

/** A bridge refusal, passed through with its contract code, message and problems. */
export function bridgeFailure(res: BridgeResponse): CallToolResult {
  const b = res.body;
  const envelope: ErrorEnvelope = {
    ok: false,
    error: typeof b['error'] === 'string' ? b['error'] : `http_${res.status}`,
    message: typeof b['message'] === 'string' ? b['message'] : 'the bridge refused the request',
    problems: Array.isArray(b['problems']) ? b['problems'].map(String) : [],
    httpStatus: res.status,
  };
  return { content: text(envelope), isError: true };
}

export const isSuccess = (res: BridgeResponse): boolean => res.status >= 200 && res.status < 300;
