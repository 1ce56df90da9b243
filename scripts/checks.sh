#!/usr/bin/env bash
# What `npm test` runs before the suite, at once: the build (the suite runs the CLI bundle), the
# type check, the linters and the dependency rules. None of them reads what another writes, and
# each is mostly one process on one core: on a 2-core machine they take about half the time one
# after the other does. A step's output is printed when it fails (all of them are waited for).
set -u
cd "$(dirname "$0")/.."
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
steps=(build typecheck lint deps)
pids=()
started=$SECONDS
for step in "${steps[@]}"; do
  npm run --silent "$step" >"$out/$step" 2>&1 &
  pids+=($!)
done
failed=()
for i in "${!steps[@]}"; do
  if ! wait "${pids[$i]}"; then
    failed+=("${steps[$i]}")
    printf '\n== npm run %s failed:\n' "${steps[$i]}" >&2
    cat "$out/${steps[$i]}" >&2
  fi
done
if [ "${#failed[@]}" -gt 0 ]; then
  printf '\nfailed: %s\n' "${failed[*]}" >&2
  exit 1
fi
echo "build, typecheck, lint, deps: passed ($((SECONDS - started)) s)"
