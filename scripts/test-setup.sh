#!/usr/bin/env bash
# What the test suite needs besides npm packages: Debian's Chromium (for the dashboard browser
# test), Debian's python3-kubernetes (the official Python client, for kube-sim's conformance test;
# the test runs /usr/bin/python3, not a python3 earlier on PATH) and a running PostgreSQL 15 (for
# the server tests on PostgreSQL). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

# apt_install PACKAGE: apt-get update, then install, as root or through sudo.
apt_install() {
  local sudo=""
  if [ "$(id -u)" != "0" ]; then sudo="sudo"; fi
  $sudo apt-get update -qq && $sudo apt-get install -y -qq "$1" >/dev/null
}

if ! command -v chromium >/dev/null 2>&1; then
  echo "installing chromium (Debian package) for the dashboard browser test"
  apt_install chromium
fi
if ! /usr/bin/python3 -c 'import kubernetes' >/dev/null 2>&1; then
  echo "installing python3-kubernetes (Debian package) for the kube-sim Python client conformance test"
  apt_install python3-kubernetes
fi
if ! command -v kubectl >/dev/null 2>&1; then
  echo "warning: kubectl is not installed; the kube-sim conformance tests need it" >&2
fi
bash scripts/ci-postgres.sh
