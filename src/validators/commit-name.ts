/** A full object name (SHA-1 or SHA-256 hex): the only form of commit name that ever reaches git. */
const COMMIT = /^([0-9a-f]{40}|[0-9a-f]{64})$/;

export function isCommitName(value: string): boolean {
  return COMMIT.test(value);
}
