#!/usr/bin/env bash
# The main command: install what is missing, start the local stack, run the lab's acceptance test (or publish a
# JSON-lines file given as FILE), with `--pipeline telemetry` the telemetry simulator, or with `--pipeline NAME
# --samples` any pipeline's sample messages, print where the messages ended, stop everything. Exit 0 only if the check passed; 2 for a usage error (checked before any stack starts).
set -euo pipefail
# npm runs scripts from the package root; resolve a relative events path against where the user typed it.
caller_dir="${INIT_CWD:-$PWD}"
cd "$(dirname "$0")/../.."
# Bad flags fail in a second, before the stack's minute of start-up (when node_modules is there to parse them;
# otherwise demo.ts reports them the same way once install.sh ran).
if [ -x node_modules/.bin/tsx ]; then
  status=0
  node_modules/.bin/tsx deploy/local/demo-args.ts "$caller_dir" "$@" || status=$?
  case "$status" in
    0) ;;
    3) exit 0 ;; # --help was printed
    *) exit "$status" ;;
  esac
fi
OFFVIA_DEMO_BASE_DIR="$caller_dir" exec bash deploy/local/with-stack.sh npx tsx deploy/local/demo.ts "$@"
