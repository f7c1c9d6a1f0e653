import { hash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { BridgeError, CreateRunSchema, RunEventSchema } from '../contract/index.js';
import { isLoopbackHost } from '../contract/loopback.js';

const sha256 = (s: string): Buffer => hash('sha256', s, 'buffer');

/**
 * The digest of a presented secret, decoded into one reused buffer: a hex digest and a 32-byte
 * write cost a third of what a new Buffer from `hash` does, and this runs on every request.
 */
const presentedDigest = Buffer.alloc(32);
function digestOfPresented(s: string): Buffer {
  presentedDigest.write(hash('sha256', s, 'hex'), 'hex');
  return presentedDigest;
}

/** Digests of the expected secrets (a handful per process), so each request hashes only its own. */
const expectedDigests = new Map<string, Buffer>();
function expectedDigest(expected: string): Buffer {
  let d = expectedDigests.get(expected);
  if (d === undefined) {
    if (expectedDigests.size >= 16) expectedDigests.clear();
    d = sha256(expected);
    expectedDigests.set(expected, d);
  }
  return d;
}

/** Compares a presented secret with the expected one in constant time (equal-length digests). */
export function secretMatches(presented: string | string[] | undefined, expected: string): boolean {
  if (typeof presented !== 'string' || presented === '') return false;
  return timingSafeEqual(digestOfPresented(presented), expectedDigest(expected));
}

/**
 * A hook from a synchronous check, in Fastify's callback style: no promise per request on the hot
 * path; a thrown error becomes the error reply, exactly as from an async hook.
 */
export function syncHook(
  check: (req: FastifyRequest) => void,
): (req: FastifyRequest, reply: unknown, done: (err?: Error) => void) => void {
  return (req, _reply, done) => {
    try {
      check(req);
    } catch (err) {
      done(err as Error);
      return;
    }
    done();
  };
}

function hostOf(value: string): { host: string; port: string } | null {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(value);
  if (!m) return null;
  return { host: (m[1] ?? '').replace(/^\[|\]$/g, '').toLowerCase(), port: m[2] ?? '80' };
}

function checkHost(value: string | undefined, port: number): void {
  const host = hostOf(value ?? '');
  if (!host || !isLoopbackHost(host.host) || host.port !== String(port)) {
    throw new BridgeError('host_not_allowed', 'the Host header is not the bridge loopback address');
  }
}

const ACCEPTED_HOSTS_MAX = 16;

/**
 * DNS-rebinding defence: a browser tricked into sending a request to the loopback port carries the
 * attacker's host name in `Host`; only a loopback literal with the bridge's own port is accepted.
 * A cross-site `Origin` is refused outright: browsers reach the bridge only through the UI proxy.
 *
 * The exact `Host` values a server has accepted (the few spellings of its own loopback address
 * that clients send) are not parsed again. Only accepted values are remembered, and only while the
 * port is the same, so every refused value is checked in full.
 */
export function browserDefence(port: () => number): (req: FastifyRequest) => void {
  const accepted = new Set<string>();
  let acceptedPort = -1;
  return (req) => {
    const p = port();
    if (p !== acceptedPort) {
      accepted.clear();
      acceptedPort = p;
    }
    const host = req.headers.host;
    if (host === undefined || !accepted.has(host)) {
      checkHost(host, p);
      if (host !== undefined && accepted.size < ACCEPTED_HOSTS_MAX) accepted.add(host);
    }
    checkOrigin(req.headers.origin);
  };
}

function checkOrigin(origin: string | undefined): void {
  if (origin !== undefined) {
    let url: URL | null = null;
    try {
      url = new URL(origin);
    } catch {
      url = null;
    }
    const originHost = url?.hostname.replace(/^\[|\]$/g, '') ?? '';
    const web = url?.protocol === 'http:' || url?.protocol === 'https:';
    if (!web || !isLoopbackHost(originHost)) {
      throw new BridgeError('origin_not_allowed', 'cross-site requests are not allowed');
    }
  }
}

export function requireAccessToken(req: FastifyRequest, accessToken: string): void {
  if (!secretMatches(req.headers['x-harness-bridge-token'], accessToken)) {
    throw new BridgeError('bridge_auth_required', 'a valid x-harness-bridge-token header is required');
  }
}

/** Writes are JSON only (415 otherwise). */
export function requireJson(req: FastifyRequest): void {
  const header = req.headers['content-type'];
  if (header === 'application/json') return; // the usual spelling, taken without parsing
  const type = (header ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') {
    throw new BridgeError('unsupported_media_type', 'writes must be sent as application/json');
  }
}

/**
 * Refuses bodies that name or carry a credential. The human token must only ever travel in its
 * own header; a body holding any credential value would persist it into the journal.
 */
const TOKEN_FIELD = /^(human.?(approval.?)?token|x-harness-human-token|auth|authorization|.*token)$/i;

/** Field names the body schemas declare, none of which names a credential: not tested again. */
const DECLARED_FIELDS = new Set(
  [...Object.keys(RunEventSchema.properties), ...Object.keys(CreateRunSchema.properties)].filter(
    (name) => !TOKEN_FIELD.test(name),
  ),
);

export function checkBodyForCredentials(body: unknown, secrets: { human: string; others: string[] }): void {
  if (typeof body !== 'object' || body === null) return;
  const fields = body as Record<string, unknown>;
  for (const name of Object.keys(fields)) {
    const value = fields[name];
    if (!DECLARED_FIELDS.has(name) && TOKEN_FIELD.test(name)) {
      throw new BridgeError(
        'client_supplied_human_token_rejected',
        `the body field ${JSON.stringify(name.slice(0, 64))} is refused: tokens travel only in headers`,
      );
    }
    if (typeof value !== 'string') continue;
    const carried = credentialIn(value, secrets);
    if (carried === 'human') {
      throw new BridgeError(
        'client_supplied_human_token_rejected',
        'the body carries the human approval token',
      );
    }
    if (carried === 'other') {
      throw new BridgeError('client_supplied_human_token_rejected', 'the body carries a bridge credential');
    }
  }
}

/** Which credential value, if any, a client-supplied text contains. */
function credentialIn(value: string, secrets: { human: string; others: string[] }): 'human' | 'other' | null {
  if (value.includes(secrets.human)) return 'human';
  return secrets.others.some((s) => value.includes(s)) ? 'other' : null;
}

/**
 * The run ID in the path is stored (run-config.json, the commit log) and shown in every view and,
 * through the UI proxy, in the browser: it must not carry a credential either.
 */
export function checkRunIdForCredentials(id: unknown, secrets: { human: string; others: string[] }): void {
  if (typeof id === 'string' && credentialIn(id, secrets) !== null) {
    throw new BridgeError('client_supplied_human_token_rejected', 'the run ID carries a bridge credential');
  }
}
