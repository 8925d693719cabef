#!/usr/bin/env bash
# `npm run soak:bq`: the BigQuery emulator's memory under a long stream of insertAll calls. Starts an emulator of its
# own (the stack's venv and BQEMU_* settings, ephemeral, on ports the kernel picks, so it never meets a running
# stack), runs bench/soak-bq.ts against it (RSS read from /proc/PID/status), and stops it again.
# Usage: soak-bq.sh [--calls N] [--rows R] [--max-growth-mb M] [--json]   (--help for details)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=../deploy/local/lib.sh
source "$HERE/../deploy/local/lib.sh"
cd "$OFFVIA_ROOT"

# The flags are checked (or the usage printed) before anything is installed or started.
OFFVIA_SOAK_CHECK_ONLY=1 node --import tsx "$HERE/soak-bq.ts" "$@" || exit $?
case " $* " in *" --help "* | *" -h "*) exit 0 ;; esac

bash "$OFFVIA_ROOT/deploy/local/install.sh" >&2

free_port() {
  node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}
rest_port="$(free_port)"
grpc_port="$(free_port)"
log_file="$(mktemp -t offvia-soak-bq.XXXXXX.log)"

# Its own session, so the stop below reaches every process it started.
setsid env "${OFFVIA_BQEMU_ENV[@]}" "$OFFVIA_VENV_BQ/bin/bqemulator" start --project offvia-soak \
  --rest-port "$rest_port" --grpc-port "$grpc_port" --ephemeral >"$log_file" 2>&1 </dev/null 9>&- &
emulator_pid=$!

# shellcheck disable=SC2317 # called by the EXIT trap
stop_emulator() {
  local deadline
  kill -TERM -- "-$emulator_pid" 2>/dev/null || true
  deadline=$(($(offvia_now_ms) + OFFVIA_STOP_TIMEOUT_S * 1000))
  while kill -0 "$emulator_pid" 2>/dev/null && (($(offvia_now_ms) < deadline)); do
    sleep 0.2
  done
  kill -KILL -- "-$emulator_pid" 2>/dev/null || true
  wait "$emulator_pid" 2>/dev/null || true
}
trap stop_emulator EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

deadline=$(($(offvia_now_ms) + OFFVIA_READY_TIMEOUT_S * 1000))
until curl -sf -o /dev/null --max-time 2 "http://127.0.0.1:$rest_port/healthz"; do
  if ! kill -0 "$emulator_pid" 2>/dev/null || (($(offvia_now_ms) >= deadline)); then
    offvia_log "ERROR: the BigQuery emulator did not become ready; its log ($log_file):"
    tail -n 20 "$log_file" >&2
    exit 1
  fi
  sleep 0.2
done
offvia_log "BigQuery emulator ready (pid $emulator_pid, port $rest_port, ${OFFVIA_BQEMU_ENV[*]}, log $log_file)"

# google-auth would otherwise probe the GCE metadata server for a project and credentials.
METADATA_SERVER_DETECTION=none node --import tsx "$HERE/soak-bq.ts" --url "http://127.0.0.1:$rest_port" --pid "$emulator_pid" "$@"
