#!/usr/bin/env bash
# `npm pack` / `npm publish`: the package carries the built CLI and library (no build step on the
# user's machine) and the docs its messages point at. No npm-shrinkwrap.json: npm ignores one in a
# tarball installed from a file (it reads it only from a registry), so it would promise a tree no
# test could hold it to; the dependency ranges are what is tested (test/e2e/package.test.ts).
# TEND_PACK_BUILT=1 skips the build when dist/ is fresh (the package
# test, which runs after `npm run build`, must not rewrite dist/ under the tests running beside it).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${TEND_PACK_BUILT:-}" != 1 ]; then npm run build; fi
if [ ! -f dist/cli/tend.cjs ] || [ ! -f dist/src/index.js ]; then
  echo "prepack: dist/ is not built; run npm run build" >&2
  exit 1
fi
