/**
 * What a route's schema tells the OpenAPI document beyond its 2xx bodies: the credentials it
 * takes.
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
