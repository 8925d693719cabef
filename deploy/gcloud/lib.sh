# shellcheck shell=bash
# Shared by deploy.sh and teardown.sh: locate the repository, render the plan (deploy/gcloud/cli.ts), run it.
# The plan is a bash script; --dry-run prints exactly the script a real run executes.

OFFVIA_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export OFFVIA_ROOT

# has_flag FLAG ARGS...: true when FLAG is one of ARGS.
has_flag() {
  local flag="$1" arg
  shift
  for arg in "$@"; do
    [[ "$arg" == "$flag" ]] && return 0
  done
  return 1
}

# flag_value FLAG ARGS...: the value of `FLAG VALUE` or `FLAG=VALUE` in ARGS (empty when absent).
flag_value() {
  local flag="$1"
  shift
  while (($# > 0)); do
    case "$1" in
      "$flag") printf '%s' "${2:-}"; return 0 ;;
      "$flag"=*) printf '%s' "${1#*=}"; return 0 ;;
    esac
    shift
  done
}

# render_plan deploy|teardown FLAGS...: the plan on stdout (and the metric/policy files written); exit 2 on bad flags.
render_plan() {
  local tsx="$OFFVIA_ROOT/node_modules/.bin/tsx"
  if [[ ! -x "$tsx" ]]; then
    echo "node_modules is missing: run 'npm ci' in $OFFVIA_ROOT first" >&2
    return 1
  fi
  "$tsx" "$OFFVIA_ROOT/deploy/gcloud/cli.ts" "$@"
}

# require_cloud_cli: gcloud and bq on PATH and an active gcloud account (both read local configuration only).
require_cloud_cli() {
  local tool account
  for tool in gcloud bq; do
    if ! command -v "$tool" >/dev/null 2>&1; then
      echo "$tool not found: install the Google Cloud CLI (https://cloud.google.com/sdk/docs/install)" >&2
      exit 1
    fi
  done
  account="$(gcloud auth list --filter=status:ACTIVE --format='value(account)' 2>/dev/null || true)"
  if [[ -z "$account" ]]; then
    echo "no active gcloud account: run 'gcloud auth login' first" >&2
    exit 1
  fi
  echo "running as $account" >&2
}

# usage: the flags, from the TypeScript side (one list for both scripts).
usage() {
  render_plan --help
}

# plan_or_exit deploy|teardown FLAGS...: with --help prints the usage and exits 0; otherwise renders the plan into a
# temporary file named by OFFVIA_PLAN (removed at exit; exit 2 on bad flags), and with --dry-run prints it and exits 0.
plan_or_exit() {
  local kind=$1
  shift
  if has_flag --help "$@" || has_flag -h "$@"; then
    usage
    exit 0
  fi
  OFFVIA_PLAN="$(mktemp "${TMPDIR:-/tmp}/offvia-$kind-plan.XXXXXX")"
  trap 'rm -f "$OFFVIA_PLAN"' EXIT
  render_plan "$kind" "$@" >"$OFFVIA_PLAN"
  if has_flag --dry-run "$@"; then
    cat "$OFFVIA_PLAN"
    exit 0
  fi
}
