import type { BridgeCall } from '../sources/client.js';
import { SourceError } from '../sources/client.js';
import { refuseIntegrityKey, requireEnv, UsageError } from './env.js';
import { bridgeRequest } from './http.js';

/** The bridge's HTTP API with the access token, as the sources (src/sources/) take it. */
export function bridgeCall(command: string): BridgeCall {
  refuseIntegrityKey(command);
  const token = requireEnv('HARNESS_BRIDGE_ACCESS_TOKEN');
  return async (path, init) => {
    try {
      return await bridgeRequest(path, {
        ...init,
        headers: { ...init.headers, 'x-harness-bridge-token': token },
      });
    } catch (err) {
      // The environment's fault (HARNESS_BRIDGE_URL), not the bridge's: a usage error, exit 2.
      if (err instanceof UsageError) throw new SourceError(err.message, 2);
      throw err;
    }
  };
}

/** A source's refusal keeps its exit code: 2 for usage or input, 1 for the bridge's refusal. */
export async function reporting(run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (err) {
    if (!(err instanceof SourceError)) throw err;
    if (err.exitCode === 2) throw new UsageError(err.message);
    throw new Error(err.message);
  }
}
