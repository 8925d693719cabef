#!/usr/bin/env bash
# Removes what deploy.sh created: scheduler jobs, alert policies, log metrics, functions, the Bronze subscription,
# project-level grants and the service accounts. Data (datasets, topics, dead letters, the Firestore documents of
# the window and drift stores) stays unless --delete-data. Each step deletes only what is there, so a second run
# (or a run after a partial one) deletes what is left and fails on nothing; docs/deploy.md lists what it never deletes.
# Asks for the project id before deleting anything (or pass --yes); --dry-run prints the plan and deletes nothing.
#
#   deploy/gcloud/teardown.sh --project P --region R (--pipeline NAME... | --all) [--dry-run] [--yes] [--delete-data]
#
# --pipeline deletes only the named pipelines' resources; --all also the accounts every pipeline shares.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$OFFVIA_ROOT"

plan_or_exit teardown "$@"

project="$(flag_value --project "$@")"
if ! has_flag --yes "$@"; then
  if [[ ! -t 0 ]]; then
    echo "teardown: stdin is not a terminal; pass --yes to confirm deleting the deployment in $project" >&2
    exit 1
  fi
  grep -E '^step ' "$OFFVIA_PLAN" | sed -E "s/^step '(.*)'$/  \1/" >&2
  what="the Offvia deployment"
  if ! has_flag --all "$@"; then what="the Offvia pipelines named by --pipeline (the shared accounts stay)"; fi
  if has_flag --delete-data "$@"; then what="$what AND ITS DATA (datasets, topics, dead letters, Firestore documents)"; fi
  read -r -p "This deletes $what in project $project. Type the project id to confirm: " answer
  if [[ "$answer" != "$project" ]]; then
    echo "not confirmed; nothing was deleted" >&2
    exit 1
  fi
fi

require_cloud_cli
bash "$OFFVIA_PLAN"
