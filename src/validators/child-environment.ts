/**
 * The whole environment of a process the validators start: a validator child (runner.ts) and,
 * inside it or in the bridge, git (git.ts). Threat: a credential leaking into code that reads
 * agent-written artifacts. Only PATH, HOME, LANG and the caller's extras pass; the three credential
 * names, and any value equal to a credential under whatever name, are dropped even if a caller
 * passes them. Its own module so that git.ts, which the finish-line rules reach, does not import
 * the runner that starts those rules' child.
 */
export const CREDENTIAL_NAMES = [
  'HARNESS_BRIDGE_INTEGRITY_KEY',
  'HARNESS_BRIDGE_ACCESS_TOKEN',
  'HARNESS_HUMAN_APPROVAL_TOKEN',
] as const;

/** The child's whole environment: PATH, HOME, LANG and the caller's extras, never a credential. */
export function childEnvironment(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'LANG'] as const) {
    const v = process.env[name];
    if (v !== undefined) env[name] = v;
  }
  Object.assign(env, extra);
  const secretValues = new Set(
    CREDENTIAL_NAMES.map((n) => process.env[n]).filter((v): v is string => typeof v === 'string' && v !== ''),
  );
  for (const name of Object.keys(env)) {
    if ((CREDENTIAL_NAMES as readonly string[]).includes(name) || secretValues.has(env[name]!))
      delete env[name];
  }
  return env;
}
