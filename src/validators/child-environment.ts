import { childPath } from './git-executable.js';

/**
 * The whole environment of a process the validators start: a validator child (runner.ts) and,
 * inside it or in the bridge, git (git.ts). Threats: a credential leaking into code that reads
 * agent-written artifacts, and a program the agent planted on the caller's PATH running in place
 * of one the child looks up. Only HOME, LANG and the caller's extras pass, with a fixed PATH
 * (git-executable.ts) that no caller overrides; the three credential names and the export key's, and any value equal
 * to a credential under whatever name, are dropped even if a caller passes them. Its own module so
 * that git.ts, which the finish-line rules reach, does not import the runner that starts those
 * rules' child.
 */
export const CREDENTIAL_NAMES = [
  'HARNESS_BRIDGE_INTEGRITY_KEY',
  'HARNESS_BRIDGE_ACCESS_TOKEN',
  'HARNESS_HUMAN_APPROVAL_TOKEN',
] as const;

/**
 * The bridge's Ed25519 export key (its private half, base64 PKCS #8), which signs run bundles
 * (server/export.ts). Optional, so not among the three every bridge needs; withheld from children
 * all the same.
 */
export const EXPORT_KEY_NAME = 'HARNESS_BRIDGE_EXPORT_KEY';
const WITHHELD_NAMES: readonly string[] = [...CREDENTIAL_NAMES, EXPORT_KEY_NAME];

/**
 * The credential values of the bridge this process runs, which it may hold outside its
 * environment (read from files at startup): dropped from a child's environment under any name,
 * as a value in this process's environment is.
 */
let withheld: ReadonlySet<string> = new Set();
export function withholdFromChildren(values: readonly string[]): void {
  withheld = new Set(values.filter((v) => v !== ''));
}

/** The child's whole environment: HOME, LANG, the caller's extras and the fixed PATH, never a credential. */
export function childEnvironment(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ['HOME', 'LANG'] as const) {
    const v = process.env[name];
    if (v !== undefined) env[name] = v;
  }
  Object.assign(env, extra, { PATH: childPath() });
  const secretValues = new Set([
    ...withheld,
    ...WITHHELD_NAMES.map((n) => process.env[n]).filter(
      (v): v is string => typeof v === 'string' && v !== '',
    ),
  ]);
  for (const name of Object.keys(env)) {
    if (WITHHELD_NAMES.includes(name) || secretValues.has(env[name]!)) delete env[name];
  }
  return env;
}
