#!/usr/bin/env bash
# `npm run dashboard`: serves the live dashboard (`offvia dashboard`) against the local stack that is up, or, when
# none is, starts one for as long as the dashboard runs (with-stack.sh stops it again on Ctrl-C). With --project
# it targets that Google Cloud project and starts nothing.
# Usage: dashboard.sh [offvia dashboard flags]   e.g. dashboard.sh --port 9000 --since 6h
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OFFVIA="$OFFVIA_ROOT/bin/offvia.cjs"

for arg in "$@"; do
  if [[ "$arg" == --project || "$arg" == --project=* || "$arg" == -h || "$arg" == --help ]]; then
    exec node "$OFFVIA" dashboard "$@"
  fi
done

stack_status=0
bash "$HERE/stack.sh" status >/dev/null 2>&1 || stack_status=$?
case "$stack_status" in
  0) exec node "$OFFVIA" dashboard "$@" ;;
  3)
    # Bad flags or a port in use are one line and no stack, not a stack started only to refuse them. Without
    # node_modules (a fresh clone) the check is left to the dashboard itself, after with-stack.sh installed them.
    if [[ -d "$OFFVIA_ROOT/node_modules" ]]; then
      node "$OFFVIA" dashboard --check "$@" || exit $?
    fi
    offvia_log "no local stack is up: starting one for the dashboard (stopped again on Ctrl-C)"
    exec bash "$HERE/with-stack.sh" node "$OFFVIA" dashboard "$@"
    ;;
  *)
    bash "$HERE/stack.sh" status >&2 || true
    offvia_die "the local stack in ${OFFVIA_STACK_DIR} is partly up; stop it with 'npm run stack:down' first"
    ;;
esac
