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
 */
export const GIT_ISOLATION_ENV: Readonly<Record<string, string>> = {
  GIT_ALLOW_PROTOCOL: '',
  GIT_NO_LAZY_FETCH: '1',
};
