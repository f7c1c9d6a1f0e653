import { bridgeUrl, readIntegerVar, refuseCredentials, requireEnv, UsageError } from '../cli/env.js';
import { NOT_AGENT_SIDE } from '../contract/agent-side.js';
import { PROXY_TIMEOUT_MS } from '../contract/limits.js';
import { isLoopbackHost, unbracketed } from '../contract/loopback.js';

export const UI_DEFAULT_HOST = '127.0.0.1';
export const UI_DEFAULT_PORT = 8788;
/** The bridge keeps responses under 1 MiB; the proxy refuses anything past twice that. */
export const PROXY_MAX_BYTES = 2 * 1024 * 1024;

export interface UiConfig {
  host: string;
  port: number;
  /** Only the origin is used: the proxy builds every upstream path itself. */
  bridgeUrl: URL;
  accessToken: string;
  timeoutMs: number;
}

/**
 * The UI process holds the access token and nothing stronger (SPEC Authentication rule 7): the
 * integrity key, the export key or the human token in its environment means a mis-set shell, so it refuses to start.
 */
export function loadUiConfig(env: NodeJS.ProcessEnv = process.env): UiConfig {
  refuseCredentials(NOT_AGENT_SIDE, 'harness ui', env);
  const host = unbracketed(env['HARNESS_UI_HOST'] || UI_DEFAULT_HOST);
  if (!isLoopbackHost(host)) throw new UsageError('HARNESS_UI_HOST must be a loopback address');
  const port = readIntegerVar(env, 'HARNESS_UI_PORT', { min: 0, max: 65535, default: UI_DEFAULT_PORT });
  const timeoutMs = readIntegerVar(env, 'HARNESS_BRIDGE_PROXY_TIMEOUT_MS', PROXY_TIMEOUT_MS);
  const url = bridgeUrl(env);
  const accessToken = requireEnv('HARNESS_BRIDGE_ACCESS_TOKEN', env);
  return { host, port, bridgeUrl: url, accessToken, timeoutMs };
}
