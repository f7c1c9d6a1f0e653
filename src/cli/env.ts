import { CLIENT_TIMEOUT_MS } from '../contract/limits.js';
import { isLoopbackHost } from '../contract/loopback.js';

/** Environment reading shared by the client commands (emit, approve, explain, ui, mcp). */
export const DEFAULT_BRIDGE_URL = 'http://127.0.0.1:8787';

export const CREDENTIAL_VARS = [
  'HARNESS_BRIDGE_INTEGRITY_KEY',
  'HARNESS_BRIDGE_ACCESS_TOKEN',
  'HARNESS_HUMAN_APPROVAL_TOKEN',
] as const;

/** A usage or environment problem: the command prints it and exits 2 (CONTRACT section 8). */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export function bridgeUrl(env: NodeJS.ProcessEnv = process.env): URL {
  const raw = env['HARNESS_BRIDGE_URL'] ?? DEFAULT_BRIDGE_URL;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError('HARNESS_BRIDGE_URL is not a URL');
  }
  // Every client sends a credential to this URL: a remote one would send it off the machine.
  if (url.protocol !== 'http:' || !isLoopbackHost(url.hostname))
    throw new UsageError('HARNESS_BRIDGE_URL must be an http:// loopback URL');
  // The bridge answers at its root: a path would be dropped, and a user or password would make
  // every request fail (and be echoed in the error).
  if (
    url.username !== '' ||
    url.password !== '' ||
    url.pathname !== '/' ||
    url.search !== '' ||
    url.hash !== ''
  )
    throw new UsageError(
      'HARNESS_BRIDGE_URL must be the bridge origin only (http://HOST:PORT), with no user, path or query',
    );
  return url;
}

/** Parses the KEY=value lines `harness init` writes (no shell expansion, no quoting tricks). */
export function parseEnvFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (m?.[1] !== undefined && m[2] !== undefined) env[m[1]] = m[2];
  }
  return env;
}

/** An integer variable within `range`, its default when unset; anything else a usage error. */
export function readIntegerVar(
  env: NodeJS.ProcessEnv,
  name: string,
  range: { min: number; max: number; default: number },
): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return range.default;
  if (!/^[0-9]{1,9}$/.test(raw))
    throw new UsageError(`${name} must be an integer from ${range.min} to ${range.max}`);
  const value = Number(raw);
  if (value < range.min || value > range.max) {
    throw new UsageError(`${name} must be an integer from ${range.min} to ${range.max}`);
  }
  return value;
}

export function requireEnv(name: string, env: NodeJS.ProcessEnv = process.env): string {
  const value = env[name];
  if (value === undefined || value === '') throw new UsageError(`${name} is not set in the environment`);
  return value;
}

/** Refuses to run when a credential this process must never hold is in its environment. */
export function refuseCredentials(
  names: readonly string[],
  who: string,
  env: NodeJS.ProcessEnv = process.env,
): void {
  const present = names.filter((n) => env[n] !== undefined && env[n] !== '');
  if (present.length > 0) {
    throw new UsageError(`${who} refuses to start: ${present.join(', ')} must not be in its environment`);
  }
}

/**
 * The integrity key belongs to the bridge process alone (SPEC Authentication: "never an agent,
 * browser or UI process"). Every command that calls the bridge with the access token refuses to
 * start holding it, before any request, so a shell that sourced the bridge's dev.env is caught at
 * its first command instead of handing the key to whatever that shell runs next.
 */
export function refuseIntegrityKey(who: string, env: NodeJS.ProcessEnv = process.env): void {
  // The export key (the private half that signs run bundles) is the bridge's as well.
  refuseCredentials(['HARNESS_BRIDGE_INTEGRITY_KEY', 'HARNESS_BRIDGE_EXPORT_KEY'], who, env);
}

/**
 * Credentials never come from arguments: process arguments are visible to every local user. An
 * argument carrying a credential value is refused before any request is made.
 */
export function refuseCredentialArguments(
  args: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  what = 'an argument',
): void {
  for (const name of CREDENTIAL_VARS) {
    const value = env[name];
    if (value && args.some((a) => a.includes(value)))
      throw new UsageError(
        `${what} carries the value of ${name}; credentials are read from the environment only`,
      );
  }
}

/**
 * HARNESS_CLIENT_TIMEOUT_MS, the bound on one request to the bridge (src/cli/http.ts). Checked as
 * every command starts, so a bad value is a usage error (exit 2) whichever command meets it.
 */
export function clientTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  return readIntegerVar(env, 'HARNESS_CLIENT_TIMEOUT_MS', CLIENT_TIMEOUT_MS);
}
