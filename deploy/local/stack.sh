#!/usr/bin/env bash
# Starts and stops the local stack: Pub/Sub, Firestore and BigQuery (bqemulator) emulators, the tables from sql/,
# the Pub/Sub topics and subscriptions, the Functions Framework (one process per function), the Bronze stand-in and
# the scheduler loop standing in for Cloud Scheduler (deploy/schedules.ts; OFFVIA_SCHEDULE_<NAME>_SECONDS=0 pauses
# a job).
# Each process runs in its own session (setsid), so stopping it stops its children too (gcloud leaves a Java child).
# State: .local/stack/{env,pids/,logs/,data/}.
# Usage: stack.sh up|down|status|env
#        stack.sh kill|stop|start|restart SERVICE   (fault injection for the reliability harness; see usage())
# OFFVIA_BQ_PERSISTENT=1 at `up` runs the BigQuery emulator file-backed (--persistent --data-dir), so its tables
# survive `restart bigquery-emulator`; the Firestore emulator's data is exported at `stop` and imported again at
# `start`, so its documents survive a stop too. `up` starts both from empty. OFFVIA_FIRESTORE_GATE=1 at `up` puts a
# TCP gate (deploy/local/tcp-gate.ts) in front of the Firestore emulator, so `stop` cuts every client off before the
# export and nothing acknowledged after the export is lost.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The functions the framework serves, one per line: name|signature type|default port, for every registered pipeline
# (shared/pipelines: its ingest function, schema sweep if any, fireWindows). `up` asks the registry once
# (deploy/local/stack-functions.ts, ports from localFunctionPorts in deploy/local/resources.ts) and keeps the list
# in FUNCTIONS_FILE for the other commands. The port can be overridden with OFFVIA_<NAME>_PORT (ingestBooking ->
# OFFVIA_INGEST_BOOKING_PORT); the URL is exported as OFFVIA_<NAME>_URL.
FUNCTIONS_FILE="$OFFVIA_STACK_DIR/functions"
OFFVIA_FUNCTIONS=()
load_functions() {
  OFFVIA_FUNCTIONS=()
  if [[ -f "$FUNCTIONS_FILE" ]]; then
    mapfile -t OFFVIA_FUNCTIONS <"$FUNCTIONS_FILE"
  fi
}
load_functions

# The local stack's device-directory refresh, ms (LOCAL_REFERENCE_REFRESH_MS in deploy/local/resources.ts).
LOCAL_REFERENCE_REFRESH_MS=10000

PIDS_DIR="$OFFVIA_STACK_DIR/pids"
LOGS_DIR="$OFFVIA_STACK_DIR/logs"
ENV_FILE="$OFFVIA_STACK_DIR/env"
# Start order; `down` stops in two phases: consumers (functions, Bronze stand-in) first, then the emulators.
ORDER_FILE="$OFFVIA_STACK_DIR/services"
# A path the Functions Framework answers itself (404, --ignored-routes) without calling the function: the readiness
# probe. It is a JSON POST because the framework's Pub/Sub middleware fails on a request without a body.
FUNCTION_READY_PATH=/offvia-stack-ready
# Where the Functions Framework loads functions from. Defaults to the repository (built by `npm run build` first);
# another directory is served as is, without a build.
FUNCTIONS_SOURCE="${OFFVIA_FUNCTIONS_SOURCE:-$OFFVIA_ROOT}"
TSX=(node --import tsx)

# ingestBooking -> INGEST_BOOKING
function_env_name() {
  sed -E 's/([a-z0-9])([A-Z])/\1_\2/g' <<<"$1" | tr '[:lower:]' '[:upper:]'
}

# Port of a function entry: OFFVIA_<NAME>_PORT or the entry's default.
function_port() {
  local name=$1 default_port=$2 var
  var="OFFVIA_$(function_env_name "$name")_PORT"
  printf '%s' "${!var:-$default_port}"
}

# ---- process bookkeeping ------------------------------------------------------------------------------------------

# Start time of a pid as ps prints it; with the pid it identifies a process even after the pid is reused.
proc_start_time() {
  ps -o lstart= -p "$1" 2>/dev/null | sed 's/^ *//'
}

# True if the pid is a live process. A zombie counts as dead: this machine's init reaps orphans only after a while.
proc_alive() {
  local stat
  stat="$(ps -o stat= -p "$1" 2>/dev/null)" || return 1
  [[ -n "$stat" && "$stat" != Z* ]]
}

# Live (non-zombie) processes of session $1, one pid per line.
session_members() {
  ps -eo pid=,sid=,stat= | awk -v sid="$1" '$2 == sid && $3 !~ /^Z/ { print $1 }'
}

# Starts a long-running service in a new session with stdin closed and output to its log, and records it.
# Usage: start_service NAME CMD [ARGS...]
start_service() {
  local name=$1
  shift
  local log="$LOGS_DIR/$name.log"
  # A restarted service appends to its log, so the log shows the crash and the restart in order.
  if grep -qxF "$name" "$ORDER_FILE" 2>/dev/null; then
    echo "---- $(date -u +%FT%TZ) restarted by stack.sh ----" >>"$log"
  else
    : >"$log"
    echo "$name" >>"$ORDER_FILE"
  fi
  # Not a process group leader (no job control in scripts), so setsid does not fork and $! is the session leader.
  # fd 9 (the stack lock) is closed so the service does not hold the lock after this script ends.
  setsid "$@" >>"$log" 2>&1 </dev/null 9>&- &
  local pid=$!
  printf '%s\n%s\n' "$pid" "$(proc_start_time "$pid")" >"$PIDS_DIR/$name.pid"
  # The child calls setsid() right after the fork; wait (briefly) to see that it leads its own session, since
  # stopping relies on it. A child that already exited is caught by the readiness check.
  local sid="" tries=0
  while ((tries < 100)); do
    sid="$(ps -o sid= -p "$pid" | tr -d ' ')" || true
    [[ -z "$sid" || "$sid" == "$pid" ]] && break
    tries=$((tries + 1))
    sleep 0.02
  done
  if [[ -n "$sid" && "$sid" != "$pid" ]]; then
    offvia_log "ERROR: $name (pid $pid) is not a session leader (sid $sid)"
    return 1
  fi
  offvia_log "started $name (pid $pid, log ${log#"$OFFVIA_ROOT"/})"
}

# Echoes the pid of a recorded service if its session leader is still the process we started, else nothing.
recorded_pid() {
  local file="$PIDS_DIR/$1.pid" pid start
  [[ -f "$file" ]] || return 0
  { read -r pid && read -r start; } <"$file" || return 0
  [[ -n "$pid" ]] || return 0
  if proc_alive "$pid" && [[ "$(proc_start_time "$pid")" == "$start" ]]; then
    echo "$pid"
  fi
}

# Pids still alive in the sessions of the named services. A session whose leader exited can still have members
# (e.g. gcloud's Java child); its id cannot be reused while they live, so they are ours.
services_members() {
  local name file pid start
  for name in "$@"; do
    file="$PIDS_DIR/$name.pid"
    [[ -f "$file" ]] || continue
    { read -r pid && read -r start; } <"$file" || continue
    if kill -0 "$pid" 2>/dev/null && [[ "$(proc_start_time "$pid")" != "$start" ]]; then
      continue # the pid now belongs to another process: nothing of ours is left
    fi
    session_members "$pid"
  done
}

# Stops the named services together: SIGTERM to every process of their sessions (also to any that appears while
# stopping, e.g. a child forked just before the signal), wait up to OFFVIA_STOP_TIMEOUT_S for all to exit, then
# SIGKILL what is left. Returns 1 if anything survives.
stop_services() {
  (($# > 0)) || return 0
  local members pid started
  local -A signalled=()
  members="$(services_members "$@")"
  started="$(offvia_now_ms)"
  local deadline=$((started + OFFVIA_STOP_TIMEOUT_S * 1000))
  [[ -z "$members" ]] || offvia_log "stopping $* (SIGTERM)"
  while :; do
    if [[ -z "$members" ]]; then
      # Settle once more, so a process forked while the others exited is not missed.
      sleep 0.2
      members="$(services_members "$@")"
      [[ -n "$members" ]] || break
    fi
    for pid in $members; do
      if [[ -z "${signalled[$pid]:-}" ]]; then
        kill -TERM "$pid" 2>/dev/null || true
        signalled[$pid]=1
      fi
    done
    (($(offvia_now_ms) < deadline)) || break
    sleep 0.1
    members="$(services_members "$@")"
  done
  if [[ -n "$members" ]]; then
    offvia_log "still running $(($(offvia_now_ms) - started)) ms after SIGTERM, sending SIGKILL: $(tr '\n' ' ' <<<"$members")"
    # shellcheck disable=SC2086 # one pid per word
    kill -KILL $members 2>/dev/null || true
    deadline=$(($(offvia_now_ms) + 5000))
    while [[ -n "$(services_members "$@")" ]] && (($(offvia_now_ms) < deadline)); do
      sleep 0.1
    done
    members="$(services_members "$@")"
  fi
  if [[ -n "$members" ]]; then
    offvia_log "ERROR: could not stop pids $(tr '\n' ' ' <<<"$members")"
    return 1
  fi
  local name
  for name in "$@"; do
    rm -f "$PIDS_DIR/$name.pid"
  done
}

# Every service this stack started, in start order, whether it runs now or was stopped since (`stop` removes its pid
# file but keeps it here, so `down` and `status` still see it). Returns 0 whatever the last name is: callers run it
# in a command substitution under `set -e`.
recorded_services() {
  [[ -f "$ORDER_FILE" ]] || return 0
  local name
  while read -r name; do
    if [[ -n "$name" ]]; then
      echo "$name"
    fi
  done <"$ORDER_FILE"
}

# Stops every recorded service: consumers first, so they do not log errors about vanished emulators.
stop_all() {
  local consumers=() emulators=() name status=0
  while read -r name; do
    [[ -n "$name" ]] || continue
    case "$name" in
      fn-* | bronze-standin | scheduler) consumers+=("$name") ;;
      *) emulators+=("$name") ;;
    esac
  done < <(recorded_services)
  stop_services "${consumers[@]}" || status=1
  stop_services "${emulators[@]}" || status=1
  if ((status == 0)); then
    rm -f "$ORDER_FILE" "$ENV_FILE"
  fi
  return "$status"
}

# ---- readiness ----------------------------------------------------------------------------------------------------

# Fails with the log's tail when the service's process has exited.
ensure_alive() {
  local name=$1
  if [[ -z "$(recorded_pid "$name")" ]]; then
    offvia_log "ERROR: $name exited during startup; last lines of ${LOGS_DIR#"$OFFVIA_ROOT"/}/$name.log:"
    tail -n 20 "$LOGS_DIR/$name.log" | sed 's/^/    /' >&2
    return 1
  fi
}

# Polls URL until it answers with an HTTP status matching STATUS_REGEX, bounded by OFFVIA_READY_TIMEOUT_S.
# Usage: wait_http NAME URL STATUS_REGEX [CURL_ARGS...]
wait_http() {
  local name=$1 url=$2 accept=$3 started code
  shift 3
  started="$(offvia_now_ms)"
  local deadline=$((started + OFFVIA_READY_TIMEOUT_S * 1000))
  while :; do
    ensure_alive "$name" || return 1
    code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$@" "$url" || true)"
    if [[ "$code" =~ $accept ]]; then
      offvia_log "$name ready after $(($(offvia_now_ms) - started)) ms ($url -> $code)"
      return 0
    fi
    if (($(offvia_now_ms) >= deadline)); then
      offvia_log "ERROR: $name not ready after ${OFFVIA_READY_TIMEOUT_S}s ($url answered '${code:-nothing}'); see ${LOGS_DIR#"$OFFVIA_ROOT"/}/$name.log"
      return 1
    fi
    sleep 0.2
  done
}

# Polls until FILE exists (written by the service once it is ready).
wait_file() {
  local name=$1 file=$2 started
  started="$(offvia_now_ms)"
  local deadline=$((started + OFFVIA_READY_TIMEOUT_S * 1000))
  until [[ -f "$file" ]]; do
    ensure_alive "$name" || return 1
    if (($(offvia_now_ms) >= deadline)); then
      offvia_log "ERROR: $name not ready after ${OFFVIA_READY_TIMEOUT_S}s; see ${LOGS_DIR#"$OFFVIA_ROOT"/}/$name.log"
      return 1
    fi
    sleep 0.2
  done
  offvia_log "$name ready after $(($(offvia_now_ms) - started)) ms"
}

# ---- services by name ---------------------------------------------------------------------------------------------

# Where the BigQuery emulator keeps its DuckDB file with OFFVIA_BQ_PERSISTENT=1, and where the Firestore emulator's
# data is exported before a stop and imported from at the next start. `up` empties both.
BQ_DATA_DIR="$OFFVIA_STACK_DIR/data/bigquery"
FIRESTORE_EXPORT_DIR="$OFFVIA_STACK_DIR/data/firestore-export"

# The function entry (name|signature|port) of a service named fn-NAME; fails for an unknown name.
function_entry() {
  local entry
  for entry in "${OFFVIA_FUNCTIONS[@]}"; do
    if [[ "fn-${entry%%|*}" == "$1" ]]; then
      echo "$entry"
      return 0
    fi
  done
  return 1
}

# Every service name the stack runs, in start order.
service_names() {
  local entry
  echo pubsub-emulator
  echo firestore-emulator
  [[ "${OFFVIA_FIRESTORE_GATE:-0}" != 1 ]] || echo firestore-gate
  echo bigquery-emulator
  for entry in "${OFFVIA_FUNCTIONS[@]}"; do
    echo "fn-${entry%%|*}"
  done
  echo bronze-standin
  echo scheduler
}

# Port the Firestore emulator itself listens on: behind the gate, its backend port; else the stack's port.
firestore_emulator_port() {
  if [[ "${OFFVIA_FIRESTORE_GATE:-0}" == 1 ]]; then
    printf '%s' "$OFFVIA_FIRESTORE_BACKEND_PORT"
  else
    printf '%s' "$OFFVIA_FIRESTORE_PORT"
  fi
}

# The gated Firestore emulator's own port: OFFVIA_FIRESTORE_BACKEND_PORT when set (checked with the others), else the
# first free port from 29000 + (OFFVIA_FIRESTORE_PORT mod 3000), below the ephemeral range and apart from the
# function ports (20000-28999), so stacks on other ports pick different ones.
firestore_backend_port() {
  if [[ -n "${OFFVIA_FIRESTORE_BACKEND_PORT:-}" ]]; then
    printf '%s' "$OFFVIA_FIRESTORE_BACKEND_PORT"
  else
    offvia_free_port $((29000 + OFFVIA_FIRESTORE_PORT % 3000)) ||
      offvia_die "no free port for the Firestore emulator behind the gate between 29000 and $((EPHEMERAL_PORT_LOW - 1))"
  fi
}

# The newest Firestore export's metadata file, if a stop left one.
latest_firestore_export() {
  [[ -d "$FIRESTORE_EXPORT_DIR" ]] || return 0
  find "$FIRESTORE_EXPORT_DIR" -name '*.overall_export_metadata' -printf '%T@ %p\n' 2>/dev/null |
    sort -n | tail -n 1 | cut -d' ' -f2-
}

# Starts one service by name with the stack's environment (used by `up` and by `start`); readiness is wait_ready's.
launch_service() {
  local name=$1 entry fname signature port
  case "$name" in
    pubsub-emulator)
      # The emulator's start script passes CLOUD_PUBSUB_EMULATOR_OPTS to the JVM: keep failed pushes out of its log.
      CLOUD_PUBSUB_EMULATOR_OPTS="-Djava.util.logging.config.file=$OFFVIA_ROOT/deploy/local/pubsub-emulator-logging.properties" \
        start_service pubsub-emulator gcloud beta emulators pubsub start \
        "--host-port=127.0.0.1:$OFFVIA_PUBSUB_PORT" "--project=$OFFVIA_PROJECT_ID" \
        "--data-dir=$OFFVIA_STACK_DIR/data/pubsub"
      ;;
    firestore-emulator)
      local import
      import="$(latest_firestore_export)"
      start_service firestore-emulator gcloud emulators firestore start \
        "--host-port=127.0.0.1:$(firestore_emulator_port)" ${import:+"--import-data=$import"}
      ;;
    firestore-gate)
      rm -f "$OFFVIA_STACK_DIR/firestore-gate.ready"
      OFFVIA_GATE_READY_FILE="$OFFVIA_STACK_DIR/firestore-gate.ready" \
        start_service firestore-gate "${TSX[@]}" deploy/local/tcp-gate.ts "$OFFVIA_FIRESTORE_PORT" \
        "$OFFVIA_FIRESTORE_BACKEND_PORT"
      ;;
    bigquery-emulator)
      local storage=(--ephemeral)
      if [[ "${OFFVIA_BQ_PERSISTENT:-0}" == 1 ]]; then
        mkdir -p "$BQ_DATA_DIR"
        storage=(--persistent --data-dir "$BQ_DATA_DIR")
      fi
      start_service bigquery-emulator env "${OFFVIA_BQEMU_ENV[@]}" "$OFFVIA_VENV_BQ/bin/bqemulator" start \
        --project "$OFFVIA_PROJECT_ID" \
        --rest-port "$OFFVIA_BQ_REST_PORT" --grpc-port "$OFFVIA_BQ_GRPC_PORT" "${storage[@]}"
      ;;
    fn-*)
      entry="$(function_entry "$name")" || offvia_die "unknown service $name"
      IFS='|' read -r fname signature port <<<"$entry"
      # On the deployed runtime's major (lib.sh), not whatever node is on PATH.
      [[ -x "$OFFVIA_NODE_BIN/node" ]] ||
        offvia_die "Node.js $OFFVIA_NODE_MAJOR is not installed in ${OFFVIA_NODE_DIR#"$OFFVIA_ROOT"/}: run bash deploy/local/install.sh"
      start_service "$name" "$OFFVIA_NODE_BIN/node" "$OFFVIA_ROOT/node_modules/.bin/functions-framework" \
        "--source=$FUNCTIONS_SOURCE" "--target=$fname" "--signature-type=$signature" \
        "--port=$(function_port "$fname" "$port")" "--ignored-routes=$FUNCTION_READY_PATH"
      ;;
    bronze-standin)
      rm -f "$OFFVIA_STACK_DIR/bronze.ready"
      OFFVIA_BRONZE_READY_FILE="$OFFVIA_STACK_DIR/bronze.ready" \
        start_service bronze-standin "${TSX[@]}" deploy/local/bronze-standin.ts
      ;;
    scheduler)
      rm -f "$OFFVIA_STACK_DIR/scheduler.ready"
      OFFVIA_SCHEDULER_READY_FILE="$OFFVIA_STACK_DIR/scheduler.ready" \
        start_service scheduler "${TSX[@]}" deploy/local/scheduler.ts
      ;;
    *) offvia_die "unknown service '$name' (one of: $(service_names | tr '\n' ' '))" ;;
  esac
}

# Waits until the named service answers (or wrote its ready file).
wait_ready() {
  local name=$1 entry fname signature port
  case "$name" in
    pubsub-emulator) wait_http "$name" "http://127.0.0.1:$OFFVIA_PUBSUB_PORT/" '^200$' ;;
    firestore-emulator) wait_http "$name" "http://127.0.0.1:$(firestore_emulator_port)/" '^200$' ;;
    firestore-gate) wait_file "$name" "$OFFVIA_STACK_DIR/firestore-gate.ready" ;;
    bigquery-emulator) wait_http "$name" "http://127.0.0.1:$OFFVIA_BQ_REST_PORT/healthz" '^200$' ;;
    fn-*)
      entry="$(function_entry "$name")" || offvia_die "unknown service $name"
      IFS='|' read -r fname signature port <<<"$entry"
      wait_http "$name" "http://127.0.0.1:$(function_port "$fname" "$port")$FUNCTION_READY_PATH" '^404$' \
        -X POST -H 'Content-Type: application/json' --data '{}'
      ;;
    bronze-standin) wait_file "$name" "$OFFVIA_STACK_DIR/bronze.ready" ;;
    scheduler) wait_file "$name" "$OFFVIA_STACK_DIR/scheduler.ready" ;;
    *) offvia_die "unknown service '$name'" ;;
  esac
}

# ---- commands -----------------------------------------------------------------------------------------------------

write_env_file() {
  local entry name signature port
  {
    echo "# Written by deploy/local/stack.sh up; source it to talk to the local stack."
    echo "export PUBSUB_EMULATOR_HOST=127.0.0.1:$OFFVIA_PUBSUB_PORT"
    echo "export FIRESTORE_EMULATOR_HOST=127.0.0.1:$OFFVIA_FIRESTORE_PORT"
    # The Node client uses this value as its base URL verbatim, so it must include the API path.
    echo "export BIGQUERY_EMULATOR_HOST=http://127.0.0.1:$OFFVIA_BQ_REST_PORT/bigquery/v2"
    echo "export GOOGLE_CLOUD_PROJECT=$OFFVIA_PROJECT_ID"
    echo "export OFFVIA_PROJECT_ID=$OFFVIA_PROJECT_ID"
    echo "export OFFVIA_BQ_LOCATION=$OFFVIA_BQ_LOCATION"
    echo "export OFFVIA_FIRESTORE_DATABASE=$OFFVIA_FIRESTORE_DATABASE"
    echo "export OFFVIA_BQ_PERSISTENT=${OFFVIA_BQ_PERSISTENT:-0}"
    echo "export OFFVIA_FIRESTORE_GATE=${OFFVIA_FIRESTORE_GATE:-0}"
    # Where the pid files are (tests read the BigQuery emulator's, to measure its memory).
    echo "export OFFVIA_STACK_DIR=$OFFVIA_STACK_DIR"
    if [[ "${OFFVIA_FIRESTORE_GATE:-0}" == 1 ]]; then
      echo "export OFFVIA_FIRESTORE_BACKEND_PORT=$OFFVIA_FIRESTORE_BACKEND_PORT"
    fi
    # The telemetry device directory (a side input) is reloaded once it is this old: 10 s locally (its minimum),
    # not the deployed 5 min, so devices the simulator or a test provisions are seen within seconds.
    echo "export OFFVIA_TELEMETRY_REFERENCE_REFRESH_MS=${OFFVIA_TELEMETRY_REFERENCE_REFRESH_MS:-$LOCAL_REFERENCE_REFRESH_MS}"
    # google-auth would otherwise probe the GCE metadata server for a project and credentials.
    echo "export METADATA_SERVER_DETECTION=none"
    # Further pipeline folders the stack was set up with (a test's fixture): every client must read the same registry.
    if [[ -n "${OFFVIA_EXTRA_PIPELINE_DIRS:-}" ]]; then
      echo "export OFFVIA_EXTRA_PIPELINE_DIRS=$OFFVIA_EXTRA_PIPELINE_DIRS"
    fi
    for entry in "${OFFVIA_FUNCTIONS[@]}"; do
      IFS='|' read -r name signature port <<<"$entry"
      port="$(function_port "$name" "$port")"
      echo "export OFFVIA_$(function_env_name "$name")_PORT=$port"
      echo "export OFFVIA_$(function_env_name "$name")_URL=http://127.0.0.1:$port"
    done
  } >"$ENV_FILE.tmp"
  mv "$ENV_FILE.tmp" "$ENV_FILE"
}

# Echoes "up" (every recorded service alive), "down" (nothing recorded or alive) or "partial".
stack_state() {
  local name alive=0 dead=0
  while read -r name; do
    [[ -n "$name" ]] || continue
    if [[ -n "$(recorded_pid "$name")" ]]; then alive=$((alive + 1)); else dead=$((dead + 1)); fi
  done < <(recorded_services)
  if ((alive == 0 && dead == 0)) && [[ ! -f "$ENV_FILE" ]]; then
    echo down
  elif ((dead == 0 && alive > 0)) && [[ -f "$ENV_FILE" ]]; then
    echo up
  else
    echo partial
  fi
}

UP_STEP=""
UP_DONE=0
# One-shot steps (build, apply-sql, setup-pubsub) running in the background: name -> pid.
declare -A ONESHOT_PIDS=()

# Starts a one-shot step in the background, in its own session (a failed `up` stops it with its children, such as
# tsc or tsx's esbuild). Usage: start_oneshot NAME CMD [ARGS...]; output goes to logs/NAME.log.
start_oneshot() {
  local name=$1
  shift
  setsid "$@" >"$LOGS_DIR/$name.log" 2>&1 </dev/null 9>&- &
  ONESHOT_PIDS[$name]=$!
}

# Waits for a one-shot step; on failure prints its log's tail and returns 1.
wait_oneshot() {
  local name=$1 status=0
  UP_STEP="$name (log ${LOGS_DIR#"$OFFVIA_ROOT"/}/$name.log)"
  wait "${ONESHOT_PIDS[$name]}" || status=$?
  unset "ONESHOT_PIDS[$name]"
  if ((status != 0)); then
    tail -n 30 "$LOGS_DIR/$name.log" | sed 's/^/    /' >&2
    return 1
  fi
  offvia_log "$name done"
}

# shellcheck disable=SC2317 # called by the EXIT trap
on_up_exit() {
  local status=$?
  ((UP_DONE == 1)) && return
  offvia_log "ERROR: stack up failed at step: ${UP_STEP:-start} (exit $status); stopping what was started"
  local name pid
  for name in "${!ONESHOT_PIDS[@]}"; do
    pid="${ONESHOT_PIDS[$name]}"
    kill -TERM -- "-$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  stop_all || offvia_log "ERROR: some processes could not be stopped; see above"
  ((status != 0)) || status=1
  exit "$status"
}

cmd_up() {
  local started_ms
  started_ms="$(offvia_now_ms)"
  case "$(stack_state)" in
    up)
      offvia_log "stack already up (${OFFVIA_STACK_DIR#"$OFFVIA_ROOT"/}); reusing it. Stop it with: stack.sh down"
      return 0
      ;;
    partial)
      cmd_status >&2 || true
      offvia_die "stack is partly running; run 'bash deploy/local/stack.sh down' first"
      ;;
  esac

  trap on_up_exit EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM

  UP_STEP="check installation"
  [[ -d "$OFFVIA_ROOT/node_modules" ]] || offvia_die "node_modules is missing: run bash deploy/local/install.sh"

  UP_STEP="list the registered pipelines' functions"
  mkdir -p "$OFFVIA_STACK_DIR"
  "${TSX[@]}" deploy/local/stack-functions.ts >"$FUNCTIONS_FILE.tmp"
  mv "$FUNCTIONS_FILE.tmp" "$FUNCTIONS_FILE"
  load_functions

  UP_STEP="check ports"
  local entry name signature port ports=()
  ports=("pubsub:$OFFVIA_PUBSUB_PORT" "firestore:$OFFVIA_FIRESTORE_PORT" "bigquery rest:$OFFVIA_BQ_REST_PORT"
    "bigquery grpc:$OFFVIA_BQ_GRPC_PORT")
  for entry in "${OFFVIA_FUNCTIONS[@]}"; do
    IFS='|' read -r name signature port <<<"$entry"
    ports+=("$name:$(function_port "$name" "$port")")
  done
  if [[ "${OFFVIA_FIRESTORE_GATE:-0}" == 1 ]]; then
    OFFVIA_FIRESTORE_BACKEND_PORT="$(firestore_backend_port)"
    ports+=("firestore behind the gate:$OFFVIA_FIRESTORE_BACKEND_PORT")
  fi
  local problem
  for entry in "${ports[@]}"; do
    problem="$(offvia_port_problem "${entry%:*}" "${entry##*:}")"
    [[ -z "$problem" ]] || offvia_die "$problem"
  done
  for entry in "${ports[@]}"; do
    if offvia_port_in_use "${entry##*:}"; then
      offvia_die "port ${entry##*:} (${entry%:*}) is already in use; stop whatever listens there or choose another port (see deploy/local/lib.sh)"
    fi
  done
  UP_STEP="check installation"
  [[ -x "$OFFVIA_VENV_BQ/bin/bqemulator" ]] || offvia_die "bqemulator is not installed: run bash deploy/local/install.sh"

  UP_STEP="prepare ${OFFVIA_STACK_DIR#"$OFFVIA_ROOT"/}"
  mkdir -p "$PIDS_DIR" "$LOGS_DIR" "$OFFVIA_STACK_DIR/data/pubsub"
  rm -f "$ORDER_FILE" "$OFFVIA_STACK_DIR/bronze.ready" "$OFFVIA_STACK_DIR/scheduler.ready"
  write_env_file
  # Every process started from here on gets the stack's environment.
  # shellcheck source=/dev/null
  source "$ENV_FILE"

  UP_STEP="start emulators"
  rm -rf "$BQ_DATA_DIR" "$FIRESTORE_EXPORT_DIR"
  launch_service pubsub-emulator
  launch_service firestore-emulator
  [[ "${OFFVIA_FIRESTORE_GATE:-0}" != 1 ]] || launch_service firestore-gate
  launch_service bigquery-emulator

  # The one-shot steps run while the emulators boot or alongside each other; each waits only for what it needs.
  if [[ "$FUNCTIONS_SOURCE" == "$OFFVIA_ROOT" ]]; then
    start_oneshot build npm run build
  else
    offvia_log "serving functions from $FUNCTIONS_SOURCE (OFFVIA_FUNCTIONS_SOURCE); no build"
  fi

  UP_STEP="wait for pubsub-emulator"
  wait_ready pubsub-emulator
  start_oneshot setup-pubsub "${TSX[@]}" deploy/local/setup-pubsub.ts
  UP_STEP="wait for bigquery-emulator"
  wait_ready bigquery-emulator
  start_oneshot apply-sql "${TSX[@]}" deploy/local/apply-sql.ts
  UP_STEP="wait for firestore-emulator"
  wait_ready firestore-emulator
  if [[ "${OFFVIA_FIRESTORE_GATE:-0}" == 1 ]]; then
    wait_ready firestore-gate
  fi

  wait_oneshot setup-pubsub
  wait_oneshot apply-sql
  if [[ -n "${ONESHOT_PIDS[build]:-}" ]]; then
    wait_oneshot build
  fi

  UP_STEP="start functions and the Bronze stand-in"
  for entry in "${OFFVIA_FUNCTIONS[@]}"; do
    launch_service "fn-${entry%%|*}"
  done
  launch_service bronze-standin

  for entry in "${OFFVIA_FUNCTIONS[@]}"; do
    UP_STEP="wait for fn-${entry%%|*}"
    wait_ready "fn-${entry%%|*}"
  done
  UP_STEP="wait for bronze-standin"
  wait_ready bronze-standin

  # Started last: it calls the HTTP functions, which are ready now.
  UP_STEP="start the scheduler"
  launch_service scheduler
  UP_STEP="wait for scheduler"
  wait_ready scheduler

  UP_DONE=1
  trap - EXIT INT TERM
  offvia_log "stack up in $(($(offvia_now_ms) - started_ms)) ms; environment: source ${ENV_FILE#"$OFFVIA_ROOT"/}"
}

cmd_down() {
  local started_ms services
  started_ms="$(offvia_now_ms)"
  services="$(recorded_services)"
  if [[ -z "$services" ]]; then
    rm -f "$ENV_FILE" "$ORDER_FILE"
    offvia_log "stack is not running; nothing to stop"
    return 0
  fi
  stop_all || offvia_die "stack down left processes running; see above"
  offvia_log "stack down in $(($(offvia_now_ms) - started_ms)) ms"
}

cmd_status() {
  local name pid state overall
  overall="$(stack_state)"
  echo "stack: $overall (${OFFVIA_STACK_DIR})"
  while read -r name; do
    [[ -n "$name" ]] || continue
    pid="$(recorded_pid "$name")"
    if [[ -n "$pid" ]]; then
      state="running (pid $pid)"
    elif [[ -f "$PIDS_DIR/$name.pid" ]]; then
      state="NOT RUNNING" # exited or killed: its pid file is left
    else
      state="NOT RUNNING (stopped)"
    fi
    printf '  %-20s %-24s %s\n' "$name" "$state" "${LOGS_DIR#"$OFFVIA_ROOT"/}/$name.log"
  done < <(recorded_services)
  case "$overall" in
    up) return 0 ;;
    down) return 3 ;;
    *) return 1 ;;
  esac
}

cmd_env() {
  [[ "$(stack_state)" == up ]] || offvia_die "stack is not up; run: bash deploy/local/stack.sh up"
  cat "$ENV_FILE"
}

# ---- fault injection: one service at a time (the reliability harness) --------------------------------------------

# Fails unless the stack is up and NAME is one of its services; sources the stack's environment.
require_service() {
  local name=$1
  if [[ -f "$ENV_FILE" ]]; then
    # shellcheck source=/dev/null
    source "$ENV_FILE"
  fi
  service_names | grep -xF "$name" >/dev/null || offvia_die "unknown service '$name' (one of: $(service_names | tr '\n' ' '))"
  [[ -f "$ENV_FILE" ]] || offvia_die "stack is not up; run: bash deploy/local/stack.sh up"
  grep -qxF "$name" "$ORDER_FILE" 2>/dev/null || offvia_die "$name was never started by this stack"
}

# SIGKILL to every process of the service's session, at once: a crash (no shutdown handler runs). The service stays
# down until `start`.
cmd_kill() {
  local name=$1 members
  require_service "$name"
  members="$(services_members "$name")"
  [[ -n "$members" ]] || offvia_die "$name is not running"
  # shellcheck disable=SC2086 # one pid per word
  kill -KILL $members 2>/dev/null || true
  local deadline=$(($(offvia_now_ms) + 5000))
  while [[ -n "$(services_members "$name")" ]] && (($(offvia_now_ms) < deadline)); do
    sleep 0.05
  done
  [[ -z "$(services_members "$name")" ]] || offvia_die "$name survived SIGKILL: $(services_members "$name" | tr '\n' ' ')"
  offvia_log "killed $name (SIGKILL: $(tr '\n' ' ' <<<"$members"))"
}

# Stops one service as `down` does (SIGTERM, then SIGKILL). The Firestore emulator keeps no data across a restart,
# so the documents of the system's named database (OFFVIA_FIRESTORE_DATABASE) are exported first (the emulator's
# export endpoint) and imported by the next `start`, into the same database. Behind the
# gate (OFFVIA_FIRESTORE_GATE=1) every client connection is cut before the export, so an answer the emulator gives
# after it never reaches a client (the client retries); without the gate the emulator is SIGKILLed right after the
# export, and a commit acknowledged in between (milliseconds) would be lost, which only the emulator does.
cmd_stop() {
  local name=$1
  require_service "$name"
  if [[ "$name" == firestore-emulator && -n "$(recorded_pid "$name")" ]]; then
    local gate_pid
    gate_pid="$(recorded_pid firestore-gate)"
    if [[ -n "$gate_pid" ]]; then
      kill -USR1 "$gate_pid"
      # Let the emulator finish what it received before the cut; the answers go nowhere.
      sleep 1
      offvia_log "firestore-gate: every client cut off"
    fi
    mkdir -p "$FIRESTORE_EXPORT_DIR"
    local answer
    answer="$(curl -sS --max-time 60 -X POST -H 'Content-Type: application/json' \
      "http://127.0.0.1:$(firestore_emulator_port)/emulator/v1/projects/$OFFVIA_PROJECT_ID:export" \
      --data "{\"database\":\"projects/$OFFVIA_PROJECT_ID/databases/$OFFVIA_FIRESTORE_DATABASE\",\"export_directory\":\"$FIRESTORE_EXPORT_DIR\"}")" ||
      offvia_die "Firestore export failed: $answer"
    [[ "$answer" != *'"error"'* ]] || offvia_die "Firestore export failed: $answer"
    offvia_log "exported Firestore to $(latest_firestore_export)"
    if [[ -z "$gate_pid" ]]; then
      cmd_kill "$name"
      return
    fi
  fi
  if [[ "$name" == bigquery-emulator && "${OFFVIA_BQ_PERSISTENT:-0}" != 1 ]]; then
    offvia_log "WARNING: the BigQuery emulator is in memory (OFFVIA_BQ_PERSISTENT was not 1 at up): its tables are lost"
  fi
  stop_services "$name"
  offvia_log "stopped $name"
}

# Starts a stopped or killed service again and waits until it is ready.
cmd_start() {
  local name=$1
  require_service "$name"
  [[ -z "$(recorded_pid "$name")" ]] || offvia_die "$name is already running (pid $(recorded_pid "$name"))"
  # A killed session can leave members (gcloud's Java child): they would hold the port.
  [[ -z "$(services_members "$name")" ]] || stop_services "$name"
  local started_ms
  started_ms="$(offvia_now_ms)"
  launch_service "$name"
  wait_ready "$name"
  local gate_pid
  gate_pid="$(recorded_pid firestore-gate)"
  if [[ "$name" == firestore-emulator && -n "$gate_pid" ]]; then
    kill -USR2 "$gate_pid"
    wait_http firestore-gate "http://127.0.0.1:$OFFVIA_FIRESTORE_PORT/" '^200$'
  fi
  offvia_log "started $name again in $(($(offvia_now_ms) - started_ms)) ms"
}

cmd_restart() {
  require_service "$1"
  [[ -z "$(recorded_pid "$1")" ]] || cmd_stop "$1"
  cmd_start "$1"
}

# Takes the state directory's lock on fd 9 (children never inherit it: they start with 9>&-). `up` fails at once when
# another command holds it (a second `up` must not start a second stack); every other command waits up to
# OFFVIA_STACK_LOCK_WAIT_S seconds (120) for the holder to finish, so a `down` right after an interrupted
# `kill`/`start` (the reliability harness stopped mid-fault) still stops the stack instead of leaving it running.
take_lock() {
  local command=$1 wait_s=${OFFVIA_STACK_LOCK_WAIT_S:-120}
  [[ "$wait_s" =~ ^[0-9]+$ ]] || offvia_die "OFFVIA_STACK_LOCK_WAIT_S must be a whole number of seconds, got ${wait_s}"
  mkdir -p "$OFFVIA_STACK_DIR"
  exec 9>"$OFFVIA_STACK_DIR/.lock"
  flock -n 9 && return 0
  [[ "$command" != up ]] || offvia_die "another stack.sh command is running on ${OFFVIA_STACK_DIR}"
  offvia_log "stack.sh ${command}: waiting up to ${wait_s} s for another stack.sh command on ${OFFVIA_STACK_DIR}"
  flock -w "$wait_s" 9 ||
    offvia_die "another stack.sh command still holds ${OFFVIA_STACK_DIR}/.lock after ${wait_s} s"
}

main() {
  local command=${1:-}
  # Relative paths below (deploy/local/*.ts, `node --import tsx`) resolve from the repository root.
  cd "$OFFVIA_ROOT"
  case "$command" in
    up | down)
      # One command at a time per state directory.
      take_lock "$command"
      "cmd_$command"
      ;;
    status) cmd_status ;;
    env) cmd_env ;;
    kill | stop | start | restart)
      (($# == 2)) || offvia_die "usage: $0 $command SERVICE (one of: $(service_names | tr '\n' ' '))"
      take_lock "$command"
      "cmd_$command" "$2"
      ;;
    *)
      echo "usage: $0 up|down|status|env | kill|stop|start|restart SERVICE" >&2
      exit 2
      ;;
  esac
}

main "$@"
