import { claudeCode } from './claude-code.js';
import { codex } from './codex.js';
import { gemini } from './gemini.js';
import type { RuntimeTable } from './table.js';

/** Every runtime the connector knows, by the name `harness connect` and `harness hook` take. */
export const RUNTIMES: Readonly<Record<string, RuntimeTable>> = {
  [claudeCode.name]: claudeCode,
  [codex.name]: codex,
  [gemini.name]: gemini,
};

export const RUNTIME_NAMES = Object.keys(RUNTIMES);

export function runtimeTable(name: string): RuntimeTable | undefined {
  return Object.hasOwn(RUNTIMES, name) ? RUNTIMES[name] : undefined;
}
