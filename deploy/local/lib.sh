# shellcheck shell=bash disable=SC2034 # settings here are used by the scripts that source this file
# Shared settings and helpers for the local-stack scripts; sourced by install.sh, stack.sh and with-stack.sh.
# Every setting has an environment override so several stacks (or helpers) can share one machine.

OFFVIA_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OFFVIA_LOCAL_DIR="$OFFVIA_ROOT/.local"
OFFVIA_VENV_BQ="$OFFVIA_LOCAL_DIR/venv-bq"
OFFVIA_STACK_DIR="${OFFVIA_STACK_DIR:-$OFFVIA_LOCAL_DIR/stack}"

OFFVIA_PROJECT_ID="${OFFVIA_PROJECT_ID:-offvia-local}"
OFFVIA_BQ_LOCATION="${OFFVIA_BQ_LOCATION:-US}"
# The named Firestore database of the system's state, as deployed (shared/config/ingest-config.ts has the default).
OFFVIA_FIRESTORE_DATABASE="${OFFVIA_FIRESTORE_DATABASE:-offvia}"
OFFVIA_PUBSUB_PORT="${OFFVIA_PUBSUB_PORT:-8085}"
OFFVIA_FIRESTORE_PORT="${OFFVIA_FIRESTORE_PORT:-8086}"
OFFVIA_BQ_REST_PORT="${OFFVIA_BQ_REST_PORT:-9050}"
OFFVIA_BQ_GRPC_PORT="${OFFVIA_BQ_GRPC_PORT:-9060}"
# Each function's port is OFFVIA_<FUNCTION>_PORT, else its default from the pipeline registry (stack.sh).
# The Node.js major the functions are deployed on (DEFAULT_RUNTIME nodejs22 in deploy/gcloud/functions.ts): the
# local stack serves the functions, and with-stack.sh runs its command (the test suite), on this major, installed by
# install.sh from the npm registry (the `node` package ships the official binary) into .local.
OFFVIA_NODE_MAJOR=22
OFFVIA_NODE_DIR="$OFFVIA_LOCAL_DIR/node$OFFVIA_NODE_MAJOR"
OFFVIA_NODE_BIN="$OFFVIA_NODE_DIR/node_modules/node/bin"
# Seconds a service may take to become ready, and to exit after SIGTERM before SIGKILL.
OFFVIA_READY_TIMEOUT_S="${OFFVIA_READY_TIMEOUT_S:-90}"
OFFVIA_STOP_TIMEOUT_S="${OFFVIA_STOP_TIMEOUT_S:-20}"

# Pins as docs/local-stack.md lists them; the venv marker holds this exact text, so changing a pin reinstalls.
OFFVIA_BQ_PINS="bqemulator==1.4.0 duckdb==1.5.5 duckdb-extension-spatial==1.5.5 numpy"
OFFVIA_DUCKDB_VERSION="v1.5.5"

# Settings of the BigQuery emulator (bqemulator reads BQEMU_* from its environment), as `env` arguments: time travel
# off, so that with install.sh's patch no write copies the table into a snapshot (its memory would grow without
# bound). FOR SYSTEM_TIME AS OF a past time then fails; nothing here uses it.
OFFVIA_BQEMU_ENV=(BQEMU_TIME_TRAVEL_RETENTION_DAYS=0)

# Keep gcloud offline and quiet: no prompts, update checks or usage reporting.
export CLOUDSDK_CORE_DISABLE_PROMPTS=1
export CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK=1
export CLOUDSDK_CORE_DISABLE_USAGE_REPORTING=true

offvia_log() {
  printf '[offvia %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2
}

offvia_die() {
  offvia_log "ERROR: $*"
  exit 1
}

# Linux's default ephemeral port range (net.ipv4.ip_local_port_range, 32768-60999): the kernel picks the source port
# of an outgoing connection there. A service port inside it can be taken by such a connection: the Pub/Sub emulator's
# push to a stopped function at 127.0.0.1:P may get P itself as its source port, connect to itself (TCP simultaneous
# open) and hold P, so the function cannot listen there again (docs/local-stack.md#ports). Every port of the stack is
# below it.
EPHEMERAL_PORT_LOW=32768
EPHEMERAL_PORT_HIGH=60999

# One line when PORT is no port number or lies in the ephemeral range; nothing when it is fine.
#   offvia_port_problem WHAT PORT
offvia_port_problem() {
  local what=$1 port=$2
  if ! [[ "$port" =~ ^[0-9]{1,5}$ ]] || ((port < 1 || port > 65535)); then
    echo "port '$port' for $what is not a port number"
  elif ((port >= EPHEMERAL_PORT_LOW && port <= EPHEMERAL_PORT_HIGH)); then
    echo "port $port for $what is in the kernel's ephemeral range ($EPHEMERAL_PORT_LOW-$EPHEMERAL_PORT_HIGH), where a stopped service may not get it back; choose one below $EPHEMERAL_PORT_LOW"
  fi
}

# Whether something listens on 127.0.0.1:PORT.
offvia_port_in_use() {
  (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# The first port from FROM up to just below the ephemeral range that nobody listens on now; fails when there is none.
#   offvia_free_port FROM
offvia_free_port() {
  local port=$1
  while ((port < EPHEMERAL_PORT_LOW)); do
    if ! offvia_port_in_use "$port"; then
      echo "$port"
      return 0
    fi
    port=$((port + 1))
  done
  return 1
}

# Milliseconds since the epoch, for bounded polling loops.
offvia_now_ms() {
  date +%s%3N
}

# The Google Cloud SDK root (where platform/<emulator> lives), from the gcloud on PATH.
offvia_sdk_root() {
  local gcloud_bin
  gcloud_bin="$(command -v gcloud)" || return 1
  gcloud_bin="$(readlink -f "$gcloud_bin")"
  (cd "$(dirname "$gcloud_bin")/.." && pwd)
}

# The user cache directory for what install.sh builds outside the clone (Node.js 22, the venvs), keyed by their
# pins, so a fresh clone (each CI run) links to a copy built once instead of reinstalling. OFFVIA_CACHE_DIR moves it;
# OFFVIA_CACHE_DIR=off builds inside .local as before.
OFFVIA_CACHE_DIR="${OFFVIA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/offvia}"

# Makes TARGET (a path in .local) the cached directory for KEY, building it once with BUILD DIR (a command, run
# under a lock so that concurrent clones build it once; BUILD writes DIR's completion marker itself, READY DIR tells
# whether DIR is complete). Without a cache (OFFVIA_CACHE_DIR=off) BUILD runs on TARGET itself.
#   offvia_cached_dir LABEL TARGET KEY READY BUILD
offvia_cached_dir() {
  local label=$1 target=$2 key=$3 ready=$4 build=$5 dir
  if [[ "$OFFVIA_CACHE_DIR" == off ]]; then
    "$build" "$target"
    return
  fi
  dir="$OFFVIA_CACHE_DIR/$label-$(printf '%s' "$key" | sha256sum | cut -c1-16)"
  mkdir -p "$OFFVIA_CACHE_DIR"
  (
    flock 9
    if "$ready" "$dir"; then
      offvia_log "$label: found in the user cache directory"
    else
      "$build" "$dir"
    fi
  ) 9>"$dir.lock"
  rm -rf "$target"
  mkdir -p "$(dirname "$target")"
  ln -s "$dir" "$target"
}

# Installs the Python packages PINS (a space-separated list of exact pins) into the venv VENV, unless it already
# holds exactly these pins for this Python; LABEL names it in the log. An optional CHECK (Python code) must run in
# the new venv before the install counts. The marker is written last, so an interrupted install is redone. The venv
# is built in the user cache directory (offvia_cached_dir) keyed by Python, PINS and KEY_EXTRA (for example the
# checksums of patches applied to it afterwards), and VENV links to it.
#   offvia_install_venv LABEL VENV PINS [CHECK] [KEY_EXTRA]
offvia_install_venv() {
  local label=$1 venv=$2 pins=$3
  _OFFVIA_VENV_CHECK=${4:-}
  local python="${OFFVIA_PYTHON:-python3}"
  _OFFVIA_VENV_LABEL=$label
  _OFFVIA_VENV_PINS=$pins
  _OFFVIA_VENV_WANTED="$("$python" -c 'import sys; print("python%d.%d" % sys.version_info[:2])') $pins"
  if _offvia_venv_ready "$venv"; then
    offvia_log "$label: installed ($_OFFVIA_VENV_WANTED), skipped"
    return 0
  fi
  offvia_cached_dir "$label" "$venv" "$_OFFVIA_VENV_WANTED ${5:-}" _offvia_venv_ready _offvia_venv_build
}

_offvia_venv_ready() {
  [[ -x "$1/bin/python" && -f "$1/.offvia-pins" && "$(cat "$1/.offvia-pins")" == "$_OFFVIA_VENV_WANTED" ]]
}

_offvia_venv_build() {
  local venv=$1 started_ms python="${OFFVIA_PYTHON:-python3}"
  started_ms="$(offvia_now_ms)"
  offvia_log "$_OFFVIA_VENV_LABEL: installing $_OFFVIA_VENV_PINS into ${venv#"$OFFVIA_ROOT"/}"
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv"
  # shellcheck disable=SC2086 # the pins are a word list on purpose
  "$venv/bin/pip" install --quiet --disable-pip-version-check $_OFFVIA_VENV_PINS
  if [[ -n "$_OFFVIA_VENV_CHECK" ]]; then
    "$venv/bin/python" -c "$_OFFVIA_VENV_CHECK"
  fi
  printf '%s' "$_OFFVIA_VENV_WANTED" >"$venv/.offvia-pins"
  offvia_log "$_OFFVIA_VENV_LABEL: installed in $(($(offvia_now_ms) - started_ms)) ms"
}
