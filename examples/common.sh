# Sourced by each example's run.sh: the shell helpers and the tiny package both walkthroughs use.
# Nothing here talks to the bridge.

: "${HARNESS:=harness}"
: "${STEP_TIMEOUT:=60}"

# Every command is shown before it runs and bounded by STEP_TIMEOUT seconds. Credentials travel in
# the environment only, so the line shown never holds one.
step() {
  echo "\$ $*"
  timeout "$STEP_TIMEOUT" "$@"
}
harness() {
  # shellcheck disable=SC2086 # HARNESS may be a command with arguments
  step $HARNESS "$@"
}
# `harness explain` exits 1 while the run is blocked: that answer is what we asked for.
explain() {
  harness explain "$@" || [ $? -eq 1 ]
}

# The walkthroughs create everything they use, so they start from an empty directory.
require_empty_directory() {
  if [ -n "$(ls -A .)" ]; then
    echo "run.sh: run me in an empty directory" >&2
    exit 2
  fi
}

# A git repository in the current directory holding a one-function package and its test
# (`node --test` runs it), with evidence/ ignored: the artifact root lives there, uncommitted.
make_package() {
  export GIT_AUTHOR_NAME="${GIT_AUTHOR_NAME:-Example}" GIT_AUTHOR_EMAIL="${GIT_AUTHOR_EMAIL:-example@localhost}"
  export GIT_COMMITTER_NAME="${GIT_COMMITTER_NAME:-$GIT_AUTHOR_NAME}"
  export GIT_COMMITTER_EMAIL="${GIT_COMMITTER_EMAIL:-$GIT_AUTHOR_EMAIL}"
  step git init -q
  printf 'export const add = (a, b) => a + b;\n' > add.mjs
  cat > add.test.mjs <<'JS'
import assert from 'node:assert';
import test from 'node:test';
import { add } from './add.mjs';

test('add adds', () => assert.strictEqual(add(2, 3), 5));
JS
  printf 'evidence/\n' > .gitignore
  mkdir evidence
}
