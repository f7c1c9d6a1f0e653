import { homedir } from 'node:os';
import { resolve } from 'node:path';

/** HARNESS_DATA_DIR when it is not set. */
export const DEFAULT_DATA_DIR = resolve(homedir(), '.harness', 'runs');

/** The data directory `env` names, as `readBridgeEnv` resolves it (read before it, unchecked). */
export const dataDirFrom = (env: NodeJS.ProcessEnv): string =>
  resolve(env['HARNESS_DATA_DIR'] || DEFAULT_DATA_DIR);
