#!/usr/bin/env bash
# `npm run bench`: installs what the benchmark needs (the stack's parts, the bench venv with apache-beam and
# matplotlib), starts a fresh local stack, runs bench/run.ts inside it, and stops the stack again.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The knobs are checked before anything is installed or started (run.ts checks them again).
for var in OFFVIA_BENCH_EVENTS OFFVIA_BENCH_SLOW_EVENTS OFFVIA_BENCH_CONCURRENCY OFFVIA_BENCH_FUNCTION_PORT OFFVIA_BENCH_KEYS_EVENTS OFFVIA_BENCH_FIRING_KEYS; do
  value="${!var:-}"
  if [[ -n "$value" && ! "$value" =~ ^[1-9][0-9]{0,6}$ ]]; then
    echo "bench: $var must be a whole number from 1 to 9999999, got \"$value\"" >&2
    exit 2
  fi
done
bash "$HERE/install-venv.sh"
exec bash "$HERE/../deploy/local/with-stack.sh" node --import tsx "$HERE/run.ts"
