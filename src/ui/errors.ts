import type { ErrorCode } from '../contract/errors.js';

/**
 * Codes the UI server answers with itself. The bridge's own codes (CONTRACT section 3) pass through
 * from upstream untouched; these are the proxy's, and docs/ui.md documents every one
 * (test/ui-config.test.ts keeps them, and the reused bridge codes below, in step).
 */
export const UI_ERROR_CODES = {
  method_not_allowed: { status: 405, doc: 'The UI server is read-only: only GET reaches the proxy.' },
  bridge_unreachable: { status: 502, doc: 'The bridge refused the connection or the connection failed.' },
  bridge_redirect_rejected: {
    status: 502,
    doc: 'The bridge answered with a redirect; the proxy never follows one.',
  },
  bridge_response_too_large: { status: 502, doc: 'The bridge response exceeded the proxy byte cap (2 MiB).' },
  bridge_bad_response: { status: 502, doc: 'The bridge answered with something other than JSON.' },
  bridge_timeout: { status: 504, doc: 'The bridge did not answer within HARNESS_BRIDGE_PROXY_TIMEOUT_MS.' },
} as const satisfies Record<string, { status: number; doc: string }>;

/** Bridge codes the UI server reuses with their registry status (docs/ui.md names each). */
export const UI_SHARED_CODES = {
  origin_not_allowed: 403,
  host_not_allowed: 403,
  not_found: 404,
  invalid_run_id: 400,
  invalid_query: 400,
  malformed_request: 400,
  request_timeout: 408,
  request_headers_too_large: 431,
  internal_error: 500,
} as const satisfies Partial<Record<ErrorCode, number>>;

export type UiErrorCode = keyof typeof UI_ERROR_CODES | keyof typeof UI_SHARED_CODES;

export interface UiErrorBody {
  ok: false;
  error: UiErrorCode;
  message: string;
  problems: string[];
}

export class UiError extends Error {
  override readonly name = 'UiError';
  constructor(
    readonly code: UiErrorCode,
    message: string,
    readonly problems: readonly string[] = [],
  ) {
    super(message);
  }

  get status(): number {
    return this.code in UI_ERROR_CODES
      ? UI_ERROR_CODES[this.code as keyof typeof UI_ERROR_CODES].status
      : UI_SHARED_CODES[this.code as keyof typeof UI_SHARED_CODES];
  }

  body(): UiErrorBody {
    return { ok: false, error: this.code, message: this.message, problems: [...this.problems] };
  }
}
