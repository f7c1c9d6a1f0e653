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

/** `harness approve` for one approval; `node` only when several nodes wait for that owner and scope. */
export function approveCommand(
  runId: string,
  owner: string,
  scope: string,
  decision: 'grant' | 'deny',
  node?: string,
): string {
  const which = node === undefined ? '' : ` --node ${shellQuote(node)}`;
  return `harness approve ${shellQuote(runId)} --owner ${shellQuote(owner)} --scope ${shellQuote(scope)}${which} --${decision}`;
}
