import { lstat, realpath } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/**
 * What isolates the bridge's git calls from the repository the supervised agent writes to
 * (HARNESS_REPO_ROOT): its `.git/config`, refs, index and `.git/info/*` are attacker-controlled,
 * and git runs as the bridge's user, in validator children and in the bridge process itself, where
 * any program it starts can read the bridge's credentials from /proc/<pid>/environ.
 *
 * - No git call may reach a transport. A partial-clone promisor remote turns a lookup of an absent
 *   object (`cat-file -e`, `merge-base`, `show`) into a lazy fetch, and every transport can run a
 *   program the config names: `core.sshCommand`, `remote.<name>.uploadpack` (file:// and plain
 *   paths), `core.gitProxy` (git://), `ext::` URLs, remote helpers (`<helper>::url`,
 *   `remote.<name>.vcs`), `credential.helper` and `core.askPass` (http). GIT_ALLOW_PROTOCOL is an
 *   allow-list that overrides every `protocol.*.allow` of the config; empty, it allows no
 *   transport at all (git splits it into the one name "", which no transport has), local paths
 *   and bundles included. GIT_NO_LAZY_FETCH (git >= 2.45 documents it; 2.39 honours it too) stops
 *   the fetch before it is attempted.
 * - refs/replace/* is agent-written: with replace objects on, a later commit can stand in for the
 *   one a proof names (and its tree would no longer be fixed by its name).
 * - No system or global config and no system attributes: the only config git reads is the one the
 *   bridge writes into its shadow git directory (git-shadow.ts). A HOME the agent can write to
 *   would otherwise hold a `.gitconfig` defining commands.
 */
export const GIT_ISOLATION_ENV: Readonly<Record<string, string>> = {
  GIT_ALLOW_PROTOCOL: '',
  GIT_NO_LAZY_FETCH: '1',
  GIT_NO_REPLACE_OBJECTS: '1',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_ATTR_NOSYSTEM: '1',
};

/**
 * The top level of the work tree that holds `repoRoot`, which every git call names as
 * `--work-tree` (its git directory is read through the shadow one, git-shadow.ts), so that git
 * compares HARNESS_REPO_ROOT's own files: `core.worktree` could otherwise point status and diff at
 * a pristine copy elsewhere (and `core.bare` could hide the work tree). It is found as git's
 * discovery finds it, by the nearest directory at or above `repoRoot` holding `.git` (a directory,
 * or the gitfile of a linked worktree or absorbed submodule); `repoRoot` may be a subdirectory of
 * it, and stays the working directory (pathspecs are relative to it). Null when there is none: git
 * is then not started.
 */
export async function pinnedRepository(repoRoot: string): Promise<string | null> {
  let dir = await realpath(repoRoot).catch(() => null);
  while (dir !== null) {
    if (
      await lstat(join(dir, '.git')).then(
        () => true,
        () => false,
      )
    )
      return dir;
    const up = dirname(dir);
    dir = up === dir ? null : up;
  }
  return null;
}
