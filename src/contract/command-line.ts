/**
 * Command lines the bridge and its clients print for a person to paste: the next step of a
 * finish-line problem (validators/next-step.ts), the approve command of the UI's approval panel.
 * Every word that comes from a run (IDs, owners, scopes, paths) is agent-supplied text, so it MUST
 * be quoted as one literal shell word.
 */

/** POSIX single-quoting: inside single quotes nothing but `'` is special. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9._/:@%+=,-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * A word only the person can supply (a reason, the test command, a URL). A parenthesis where a
 * word belongs is a syntax error in every POSIX shell (bash, dash, zsh), so a command pasted
 * without filling it in runs nothing: `<name>` would parse as a redirection and, with a file of
 * that name in the directory, run the command with the word left out.
 */
export const placeholder = (name: string): string => `(${name})`;

/** Placeholders the operator replaces before a denial can run. */
export const DENY_PLACEHOLDERS = {
  failureReason: placeholder('why-the-node-fails'),
  recoveryPath: placeholder('what-happens-next'),
} as const;

/**
 * `harness approve` for one approval; `node` only when several nodes wait for that owner and scope.
 * A denial fails the node, so its command carries `--failure-reason` and `--recovery-path` with
 * DENY_PLACEHOLDERS that the shell refuses until they are replaced.
 */
export function approveCommand(
  runId: string,
  owner: string,
  scope: string,
  decision: 'grant' | 'deny',
  node?: string,
): string {
  const which = node === undefined ? '' : ` --node ${shellQuote(node)}`;
  const reasons =
    decision === 'deny'
      ? ` --failure-reason ${DENY_PLACEHOLDERS.failureReason} --recovery-path ${DENY_PLACEHOLDERS.recoveryPath}`
      : '';
  return `harness approve ${shellQuote(runId)} --owner ${shellQuote(owner)} --scope ${shellQuote(scope)}${which} --${decision}${reasons}`;
}
