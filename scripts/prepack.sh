#!/usr/bin/env bash
# `npm pack` / `npm publish`: the package carries the built CLI and library (no build step on the
# user's machine) and the lockfile as npm-shrinkwrap.json, so that `npm install -g tend` gets the
# dependency tree tend was tested with, and an install from a warm npm cache needs no registry
# (postpack removes the copy). TEND_PACK_BUILT=1 skips the build when dist/ is fresh (the package
# test, which runs after `npm run build`, must not rewrite dist/ under the tests running beside it).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${TEND_PACK_BUILT:-}" != 1 ]; then npm run build; fi
if [ ! -f dist/cli/tend.cjs ] || [ ! -f dist/src/index.js ]; then
  echo "prepack: dist/ is not built; run npm run build" >&2
  exit 1
fi
cp package-lock.json npm-shrinkwrap.json
