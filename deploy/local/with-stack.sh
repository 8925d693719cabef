#!/usr/bin/env bash
# Runs a command against a fresh local stack: installs what is missing, starts the stack, runs CMD with the stack's
# environment, and always stops the stack again (also on failure and Ctrl-C). Exits with CMD's status.
# Usage: with-stack.sh CMD [ARGS...]   e.g. with-stack.sh mocha 'test/integration/**/*.test.ts'
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if (($# == 0)); then
  echo "usage: $0 CMD [ARGS...]" >&2
  exit 2
fi

# A running stack may serve an older build of the functions, and it is not ours to stop: refuse rather than reuse.
stack_status=0
bash "$HERE/stack.sh" status >/dev/null 2>&1 || stack_status=$?
if ((stack_status != 3)); then
  bash "$HERE/stack.sh" status >&2 || true
  offvia_die "a local stack is already running (or partly) in ${OFFVIA_STACK_DIR}; stop it with 'npm run stack:down' (or use another OFFVIA_STACK_DIR and ports)"
fi

bash "$HERE/install.sh"

STACK_STARTED=0
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if ((STACK_STARTED == 1)); then
    if ! bash "$HERE/stack.sh" down; then
      offvia_log "ERROR: stack down failed; processes may be left running (see above)"
      # A passing command still fails the run: it did not end clean.
      ((status != 0)) || status=1
    fi
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Marked before `up`: if up is interrupted, `down` stops whatever it had started (up also cleans after itself).
STACK_STARTED=1
bash "$HERE/stack.sh" up

# shellcheck source=/dev/null
source "$OFFVIA_STACK_DIR/env"
# This stack lives only for CMD: tools that would move its shared state past the wall clock (the demo's
# fast-forwarded fireWindows) may do so here, and only here.
export OFFVIA_STACK_THROWAWAY=1
# Commands such as mocha or tsx resolve from the project, as under `npm run`, and run on the deployed runtime's
# Node.js major (install.sh put it in .local), like the functions the stack serves.
export PATH="$OFFVIA_NODE_BIN:$OFFVIA_ROOT/node_modules/.bin:$PATH"

command_status=0
"$@" || command_status=$?
if ((command_status != 0)); then
  offvia_log "command exited with status $command_status: $*"
fi
exit "$command_status"
