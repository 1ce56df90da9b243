#!/usr/bin/env bash
# What the test suite needs besides npm packages: Debian's Chromium (for the dashboard browser
# test) and a running PostgreSQL 15 (for the server tests on PostgreSQL). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1; then
  echo "installing chromium (Debian package) for the dashboard browser test"
  if [ "$(id -u)" = "0" ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq chromium >/dev/null; fi
fi
if ! command -v kubectl >/dev/null 2>&1; then
  echo "warning: kubectl is not installed; the kube-sim conformance tests need it" >&2
fi
bash scripts/ci-postgres.sh
