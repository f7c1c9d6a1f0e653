import { fileURLToPath } from 'node:url';
import type { Launcher } from '../connectors/ours.js';

/**
 * How a runtime starts this very CLI: this node binary and the `harness` entry beside this module
 * (dist/src/cli/main.cjs), both absolute, so the hooks run in any project without `harness` on PATH.
 */
export function cliLauncher(): Launcher {
  return { node: process.execPath, entry: fileURLToPath(new URL('./main.cjs', import.meta.url)) };
}
