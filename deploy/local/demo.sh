#!/usr/bin/env bash
# The main command: install what is missing, start the local stack, run the lab's acceptance test (or publish a
# JSON-lines file given as $1), print the layers, stop everything. Exit 0 only if the check passed.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "$#" -gt 0 ] && [ ! -f "$1" ]; then
  echo "demo: no such events file: $1" >&2
  exit 2
fi
args=()
[ "$#" -gt 0 ] && args=("$(cd "$(dirname "$1")" && pwd)/$(basename "$1")")
exec bash deploy/local/with-stack.sh npx tsx deploy/local/demo.ts "${args[@]}"
