#!/usr/bin/env bash
# What the test suite needs besides npm packages: Debian's Chromium (for the dashboard browser
# test), Debian's python3-kubernetes (the official Python client, for kube-sim's conformance test;
# the test runs /usr/bin/python3, not a python3 earlier on PATH), buildah and mmdebstrap (the
# container image and its check), a running PostgreSQL 15 (for the server tests on PostgreSQL),
# the Node lines the tests run on (scripts/node-line.sh: the official builds from the npm
# registry; nothing is compiled, tend has no native addon) and the npm cache warm for an offline
# install of tend's package (the package test). Idempotent; what it downloads is kept per machine.
# It runs on the machine's node (any Node with npm): the tests themselves run on the Node lines.
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
if ! command -v faketime >/dev/null 2>&1; then
  echo "installing faketime (Debian package) for the clock tests across a server restart"
  apt_install faketime
fi
for tool in buildah mmdebstrap; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "installing $tool (Debian package) for the container image (npm run image)"
    apt_install "$tool"
  fi
done
if ! command -v kubectl >/dev/null 2>&1; then
  echo "warning: kubectl is not installed; the kube-sim conformance tests need it" >&2
fi
bash scripts/ci-postgres.sh
bash scripts/node-line.sh install

# The package test installs tend's tarball with --offline: the npm cache must hold what that
# install resolves (the packuments and tarballs of tend's dependencies, as `npm install` of the
# published package would fetch them). npm ci keeps only the locked tarballs.
deps="$(node -p "Object.entries(require('./package.json').dependencies).map(([n, r]) => n + '@' + r).join(' ')")"
scratch="$(mktemp -d)"
# shellcheck disable=SC2086 # one word per dependency
npm install --prefix "$scratch" --no-save --ignore-scripts --no-audit --no-fund --loglevel=error $deps >/dev/null
rm -rf "$scratch"
echo "npm cache: tend's dependencies ready for an offline install"

# promtool, for the /metrics test (test/server/metrics.test.ts runs `promtool check metrics`):
# taken out of Debian's prometheus package into the dev cache, not installed, since installing the
# package would also start a Prometheus server on the machine.
promtool_dir="${TEND_DEV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tend-dev}/promtool"
if [ ! -x "$promtool_dir/promtool" ]; then
  echo "extracting promtool from Debian's prometheus package for the /metrics test"
  scratch="$(mktemp -d)"
  if ! (cd "$scratch" && apt-get download -qq prometheus >/dev/null 2>&1); then
    sudo=""
    if [ "$(id -u)" != "0" ]; then sudo="sudo"; fi
    $sudo apt-get update -qq
    (cd "$scratch" && apt-get download -qq prometheus >/dev/null)
  fi
  dpkg-deb -x "$scratch"/prometheus_*.deb "$scratch/root"
  mkdir -p "$promtool_dir"
  mv "$scratch/root/usr/bin/promtool" "$promtool_dir/promtool"
  rm -rf "$scratch"
fi
echo "promtool ready: $promtool_dir/promtool"
