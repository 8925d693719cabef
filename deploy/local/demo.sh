#!/usr/bin/env bash
# The main command: install what is missing, start the local stack, run the lab's acceptance test (or publish a
# JSON-lines file given as $1), print the layers, stop everything. Exit 0 only if the check passed.
set -euo pipefail
# npm runs scripts from the package root; resolve a relative events path against where the user typed it.
caller_dir="${INIT_CWD:-$PWD}"
cd "$(dirname "$0")/../.."
args=()
if [ "$#" -gt 0 ]; then
  file="$1"
  case "$file" in /*) ;; *) file="$caller_dir/$file" ;; esac
  if [ ! -f "$file" ]; then
    echo "demo: no such events file: $1 (looked for $file)" >&2
    exit 2
  fi
  args=("$file")
fi
exec bash deploy/local/with-stack.sh npx tsx deploy/local/demo.ts "${args[@]}"
