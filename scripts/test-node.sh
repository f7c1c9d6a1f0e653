#!/usr/bin/env bash
# Runs the compiled tap suite (dist/test, made by `npm test`) again under the newest release of
# another Node major, e.g. `scripts/test-node.sh 22` (further arguments go to tap). Compile and lint do not depend on the Node
# that runs them, so only tap is repeated. The official build comes from the npm registry as the
# package node-linux-<arch> and is kept in ${XDG_CACHE_HOME:-~/.cache}/harness-bridge/node-<version>;
# a run with no registry falls back to the newest build of that major already kept there.
set -euo pipefail
cd "$(dirname "$0")/.."
major=${1:?usage: scripts/test-node.sh MAJOR [tap arguments]}
shift
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "test-node: no Node build for $(uname -m)" >&2; exit 2 ;;
esac
pkg="node-linux-$arch"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/harness-bridge"
[ -d dist/test ] || { echo "test-node: dist/test is missing; run npm test first" >&2; exit 2; }

# The newest version of the major: the registry's list, else the newest one cached.
newest() { sort -t. -k1,1n -k2,2n -k3,3n | tail -1; }
version=$(npm view "$pkg@$major" version --json 2>/dev/null |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{let v=[];try{v=[].concat(JSON.parse(s))}catch{}for(const x of v)if(/^\d+\.\d+\.\d+$/.test(x))console.log(x)})' |
  newest || true)
if [ -z "$version" ]; then
  version=$(find "$cache" -maxdepth 1 -name "node-$major.*" -printf '%f\n' 2>/dev/null | sed 's/^node-//' | newest || true)
  [ -n "$version" ] || { echo "test-node: no $pkg@$major in the registry or in $cache" >&2; exit 2; }
  echo "test-node: registry not reached; using the cached Node $version" >&2
fi

dir="$cache/node-$version"
if [ ! -x "$dir/bin/node" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  echo "test-node: fetching $pkg@$version"
  (cd "$tmp" && npm pack --silent "$pkg@$version" >/dev/null && tar -xzf "$pkg-$version.tgz" package/bin/node)
  [ "$("$tmp/package/bin/node" --version)" = "v$version" ] || { echo "test-node: $pkg@$version is not Node $version" >&2; exit 1; }
  mkdir -p "$dir/bin"
  mv "$tmp/package/bin/node" "$dir/bin/node.partial" && mv "$dir/bin/node.partial" "$dir/bin/node"
fi

export PATH="$dir/bin:$PATH"
export HARNESS_TEST_NODE_VERSION="v$version"
echo "test-node: tap under $(command -v node) ($(node --version))"
start=$SECONDS
status=0
# Its own directory for the raw TAP, so a run beside another tap run (npm test, coverage) reads
# back what this one's test processes said.
out=".tap/test-results-node-$major"
rm -rf "$out"
node node_modules/tap/dist/esm/run.mjs --output-dir "$out" "$@" || status=$?
# What a test process saw (test/build/node-version.test.ts fails the run when it differs).
grep -rh 'test process: node' "$out" 2>/dev/null | sed 's/^ *# */test-node: /' || true
echo "test-node: Node $version: tap exited $status after $((SECONDS - start)) s"
exit "$status"
