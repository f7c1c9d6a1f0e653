#!/bin/sh
# The default run: all 14 nodes required, no adapter, no review. From an empty directory to
# run.completed, with harness commands only. Each node is either passed with its artifact or
# skipped with a reason; the proof is the one document the finish line reads, and `harness proof
# run` writes it. Walkthrough: docs/finish-line.md "Walkthrough: the minimal run".
#
# Run it in an empty directory, against a running bridge (`npm start` prints how to load the agent
# shell's variables):
#
#   HARNESS                      the harness command (default: harness), e.g.
#                                "node /path/to/harness-bridge/dist/src/cli/main.cjs"
#   HARNESS_BRIDGE_URL           the bridge (default: http://127.0.0.1:8787)
#   HARNESS_BRIDGE_ACCESS_TOKEN  the agent's access token (required; never printed)
#   RUN_ID                       the run's ID (default: minimal-<date and time>)
#   STEP_TIMEOUT                 seconds any one command may take (default: 60)
#
# Exit 0 once the bridge has accepted run.completed; any failed step stops the script.
set -eu
. "$(dirname "$0")/../common.sh"

: "${HARNESS_BRIDGE_ACCESS_TOKEN:?set HARNESS_BRIDGE_ACCESS_TOKEN (the agent shell: npm start prints how)}"
: "${RUN_ID:=minimal-$(date +%Y%m%d-%H%M%S)}"
export HARNESS_BRIDGE_ACCESS_TOKEN
require_empty_directory

# 1. The project: a tiny package with a test, committed. Its evidence goes in evidence/, which
#    git ignores; the artifact root is absolute because the run seals it.
export HARNESS_REPO_ROOT="$PWD"
ROOT="$PWD/evidence"
make_package
step git add .
step git commit -q -m 'add()'

# 2. The run, with its artifact root sealed.
harness run create "$RUN_ID" --artifact-root "$ROOT"

# 3. Intake and route: the route (run/route.json) is written by its writer, bound to the run.
harness node skip "$RUN_ID" intake --reason 'the task is the route goal: one function and its test'
harness route write "$RUN_ID" --artifact-root "$ROOT" --work-type feature --goal 'add(a, b) returns a + b'
harness node pass "$RUN_ID" route

# 4. Design, implementation and checks: prose artifacts are plain files, claimed by `node pass`;
#    nodes with nothing to show for a one-function package are skipped, each with its reason.
harness node skip "$RUN_ID" code-intelligence --reason 'one source file: no code graph to build'
harness node skip "$RUN_ID" design-anchors --reason 'no user interface to anchor'
mkdir -p "$ROOT/design" "$ROOT/qa" "$ROOT/handoff"
printf '# System design\n\nadd(a, b) in add.mjs, tested by add.test.mjs with node --test.\n' \
  > "$ROOT/design/system_design.md"
harness node pass "$RUN_ID" system-design
harness node skip "$RUN_ID" production-readiness --reason 'a library: nothing is deployed'
harness node skip "$RUN_ID" cloud-platform --reason 'no cloud services'
harness node skip "$RUN_ID" implement --reason 'no agent session: the change was committed by hand'
harness node skip "$RUN_ID" redzone --reason 'no red-zone files touched'
printf '# Break-it\n\nTried negative numbers and zero by hand: add() holds.\n' > "$ROOT/qa/break-it-results.md"
harness node pass "$RUN_ID" qa-break-it
harness node skip "$RUN_ID" live-smoke --reason 'nothing is deployed to smoke-test'
harness node skip "$RUN_ID" self-heal --reason 'nothing failed, nothing to heal'
printf '# Handoff\n\nadd() is in add.mjs; node --test passes.\n' > "$ROOT/handoff/final.md"
harness node pass "$RUN_ID" handoff

# 5. What still blocks the run: only the proof. explain prints each problem with its fix.
explain "$RUN_ID" --artifact-root "$ROOT"

# 6. The fix explain printed, with the test command filled in: `harness proof run` runs the tests
#    and writes proof/proof.json from their real exit code; `node pass` claims it and passes prove.
harness proof run --run "$RUN_ID" --artifact-root "$ROOT" -- node --test &&
  harness node pass "$RUN_ID" prove --artifact proof/proof.json

# 7. Nothing blocks it now; the bridge runs the finish line once more and accepts the completion.
explain "$RUN_ID" --artifact-root "$ROOT"
harness emit "$RUN_ID" run.completed handoff 'add() done' --status passed
echo "run $RUN_ID completed"
