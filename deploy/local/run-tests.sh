#!/usr/bin/env bash
# The README's test command (npm test): every unit, integration and end-to-end test. The unit tests need no emulator
# and run in their own mocha process while the local stack starts and the integration and end-to-end tests run
# against it (with-stack.sh), whose time goes mostly to waiting on the emulators; the unit tests' report follows.
# Exits non-zero when either half fails.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$OFFVIA_ROOT"

# Both halves run on the deployed runtime's Node.js major (install.sh puts it in .local), mocha from the project.
bash deploy/local/install.sh
export PATH="$OFFVIA_NODE_BIN:$OFFVIA_ROOT/node_modules/.bin:$PATH"

mkdir -p "$OFFVIA_LOCAL_DIR/test-output"
UNIT_LOG="$OFFVIA_LOCAL_DIR/test-output/unit.log"
UNIT_PID=""
# shellcheck disable=SC2317 # called by the EXIT trap
stop_unit() {
  if [[ -n "$UNIT_PID" ]]; then
    kill "$UNIT_PID" 2>/dev/null || true
  fi
}
trap stop_unit EXIT

started_ms="$(offvia_now_ms)"
# The same generous timeout as the stack half: on a loaded machine the two halves share its cores.
mocha --timeout 600000 'test/unit/**/*.test.ts' >"$UNIT_LOG" 2>&1 &
UNIT_PID=$!

# Each line of the stack half gets the wall-clock time (HH:MM:SS): mocha prints a test's duration but not its suite's
# before/after hooks, where much of the stack half's waiting is; the gaps between lines show them.
stamp() {
  local line
  while IFS= read -r line; do printf '%(%T)T %s\n' -1 "$line"; done
}

stack_status=0
bash deploy/local/with-stack.sh mocha --timeout 600000 'test/integration/**/*.test.ts' 'test/e2e/**/*.test.ts' 2>&1 |
  stamp || stack_status=$?

unit_status=0
wait "$UNIT_PID" || unit_status=$?
UNIT_PID=""
echo "---- unit tests (ran alongside; output of ${UNIT_LOG#"$OFFVIA_ROOT"/}) ----"
cat "$UNIT_LOG"
offvia_log "tests: unit exit $unit_status, integration and end-to-end exit $stack_status, $(($(offvia_now_ms) - started_ms)) ms"
((unit_status == 0 && stack_status == 0))
