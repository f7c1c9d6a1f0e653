#!/bin/sh
# A commissioned run: a repository whose committed pack requires finish-line assurance, with a
# reviewer enrolled in its committed trust store, from an empty directory to run.completed. The
# route, proof, review and run packet are each written by their harness writer; the adapter (the
# pack's configuration) and the roster (who played which role) are the two files written here.
# Walkthrough: docs/finish-line.md "Walkthrough: the commissioned run".
#
# The bridge reads the repository's pack and trust store once, at startup, and must be started
# with the pin of the committed store: so this script starts its own bridge (`harness bridge`) once
# the repository is committed, on 127.0.0.1, with its data in ./runs, and stops it on exit.
#
#   HARNESS                       the harness command (default: harness), e.g.
#                                 "node /path/to/harness-bridge/dist/src/cli/main.cjs"
#   HARNESS_BRIDGE_INTEGRITY_KEY, HARNESS_BRIDGE_ACCESS_TOKEN, HARNESS_HUMAN_APPROVAL_TOKEN
#                                 the bridge's three credentials (required; each at least 32 bytes,
#                                 pairwise distinct; never printed). Only the bridge is given the
#                                 integrity key and the human token; the agent's commands get the
#                                 access token alone.
#   HARNESS_BRIDGE_PORT           the bridge's port (default: 0, a free one)
#   RUN_ID                        the run's ID (default: commissioned-<date and time>)
#   STEP_TIMEOUT                  seconds any one command may take (default: 60)
#
# Exit 0 once the bridge has accepted run.completed; any failed step stops the script.
set -eu
. "$(dirname "$0")/../common.sh"

: "${RUN_ID:=commissioned-$(date +%Y%m%d-%H%M%S)}"
for name in HARNESS_BRIDGE_INTEGRITY_KEY HARNESS_BRIDGE_ACCESS_TOKEN HARNESS_HUMAN_APPROVAL_TOKEN; do
  eval "[ -n \"\${$name:-}\" ]" || { echo "run.sh: set $name" >&2; exit 2; }
done
# The bridge's own credentials leave the script's environment: the client commands refuse to run
# beside the integrity key, and no agent command needs the human token.
integrity_key=$HARNESS_BRIDGE_INTEGRITY_KEY human_token=$HARNESS_HUMAN_APPROVAL_TOKEN
unset HARNESS_BRIDGE_INTEGRITY_KEY HARNESS_HUMAN_APPROVAL_TOKEN
export HARNESS_BRIDGE_ACCESS_TOKEN
require_empty_directory
HERE=$PWD
REPO=$HERE/project
ROOT=$REPO/evidence
export HARNESS_REPO_ROOT="$REPO"

# 1. The repository: a tiny package with a test, and its pack. The adapter requires assurance
#    (review, run packet, route binding, no change after the proof) and narrows the required nodes
#    to route, prove and handoff.
mkdir "$REPO" "$HERE/keys"
cd "$REPO"
make_package
mkdir .harness-pack
cat > .harness-pack/project-adapter.json <<'ADAPTER'
{
  "runtime": { "requiredNodes": ["route", "prove", "handoff"] },
  "finishLineAssurance": { "required": true }
}
ADAPTER
step git add .
step git commit -q -m 'add() and its harness pack'

# 2. A reviewer: a key pair outside the repository, its public key enrolled in the pack's trust
#    store (.harness-pack/controls/review-trust.v1.json). enroll commits nothing: it prints the
#    git commands that commit the store, run here as printed, and the pin to start the bridge with.
harness review keygen --actor-id alice --key-id alice-1 --out "$HERE/keys"
harness review enroll --key-id alice-1 --public-key "$HERE/keys/alice-1.pub.pem" --allow alice \
  > "$HERE/enroll.out"
cat "$HERE/enroll.out"
grep '^git ' "$HERE/enroll.out" > "$HERE/enroll-commit.sh"
step sh "$HERE/enroll-commit.sh"
pin=$(sed -n 's/^HARNESS_REVIEW_TRUST_SHA256=//p' "$HERE/enroll.out")
harness review pin > "$HERE/pin.out"   # the committed store's pin: the one enroll printed
cat "$HERE/pin.out"
grep -qx "HARNESS_REVIEW_TRUST_SHA256=$pin" "$HERE/pin.out"

# 3. The bridge, on this repository and pin: it reads the committed pack and trust store now.
(
  export HARNESS_BRIDGE_INTEGRITY_KEY="$integrity_key" HARNESS_HUMAN_APPROVAL_TOKEN="$human_token"
  export HARNESS_REVIEW_TRUST_SHA256="$pin" HARNESS_DATA_DIR="$HERE/runs"
  export HARNESS_BRIDGE_HOST=127.0.0.1 HARNESS_BRIDGE_PORT="${HARNESS_BRIDGE_PORT:-0}"
  # shellcheck disable=SC2086
  exec timeout 600 $HARNESS bridge > "$HERE/bridge.log" 2>&1
) &
bridge=$!
trap 'kill "$bridge" 2>/dev/null || true; wait "$bridge" 2>/dev/null || true' EXIT
tries=0
until HARNESS_BRIDGE_URL=$(sed -n 's/^Server listening at //p' "$HERE/bridge.log") && [ -n "$HARNESS_BRIDGE_URL" ]; do
  tries=$((tries + 1))
  if [ "$tries" -gt 150 ] || ! kill -0 "$bridge" 2>/dev/null; then
    echo "run.sh: the bridge did not start:" >&2
    cat "$HERE/bridge.log" >&2
    exit 1
  fi
  sleep 0.2
done
export HARNESS_BRIDGE_URL
echo "bridge at $HARNESS_BRIDGE_URL"

# 4. The run takes the repository's pack: it is commissioned.
harness run create "$RUN_ID" --artifact-root "$ROOT"

# 5. The route first (the review's scout evidence binds it), then the proof (the implementer's and
#    verifier's evidence bind it): `proof run` runs the tests with a scrubbed environment and
#    records the commit they ran at. The handoff note is post-review: it may come at any time.
harness route write "$RUN_ID" --artifact-root "$ROOT" --work-type feature --goal 'add(a, b) returns a + b'
harness node pass "$RUN_ID" route
harness proof run --run "$RUN_ID" --artifact-root "$ROOT" -- node --test
harness node pass "$RUN_ID" prove
mkdir -p "$ROOT/handoff"
printf '# Handoff\n\nadd() is in add.mjs; node --test passes at the proven commit.\n' > "$ROOT/handoff/final.md"
harness node pass "$RUN_ID" handoff

# 6. Every node has passed, yet the run is blocked: no review, no packet. explain names the fixes.
explain "$RUN_ID" --artifact-root "$ROOT"

# 7. The fixes explain printed, with the key, key id and roster filled in. The roster is the one
#    input the reviewer writes: here, the example of `harness review sign --help`. The reviewer
#    could first compare the digest `harness run create --print-evidence-bundle` prints.
cat > "$HERE/roster.json" <<'ROSTER'
{
  "scout":               { "actorId": "scout-agent",   "sessionId": "s-101", "executionId": "x-101" },
  "implementer":         { "actorId": "coder-agent",   "sessionId": "s-102", "executionId": "x-102" },
  "verifier":            { "actorId": "checker-agent", "sessionId": "s-103", "executionId": "x-103" },
  "independentReviewer": { "actorId": "alice",         "sessionId": "s-104", "executionId": "x-104",
                           "runtime": "runtime-b" }
}
ROSTER
harness review sign --run "$RUN_ID" --artifact-root "$ROOT" --key "$HERE/keys/alice-1.key.pem" --key-id alice-1 --roster "$HERE/roster.json"
harness packet write "$RUN_ID" --artifact-root "$ROOT"

# 8. Nothing blocks it now; the bridge runs the whole finish line again and accepts the completion.
explain "$RUN_ID" --artifact-root "$ROOT"
harness emit "$RUN_ID" run.completed handoff 'add() done' --status passed
echo "run $RUN_ID completed"
