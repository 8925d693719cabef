#!/usr/bin/env bash
# Deploys (or updates) the whole Offvia pipeline into one Google Cloud project: APIs, BigQuery datasets and tables
# from sql/, Firestore TTL, Pub/Sub, service accounts and least-privilege grants, the functions, Cloud Scheduler
# jobs, log-based metrics and alert policies. Idempotent: a second run changes nothing.
#
#   deploy/gcloud/deploy.sh --project P --region R [--pipeline NAME]... [--dry-run] [--name-prefix offvia-] ...
#
# Every registered pipeline (shared/pipelines/index.ts) unless --pipeline names some (docs/deploy.md, "Pipelines").
#
# --dry-run prints the full ordered plan (a bash script) without calling Google Cloud; see docs/deploy.md.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$OFFVIA_ROOT"

plan_or_exit deploy "$@"

require_cloud_cli
echo "deploying to project $(flag_value --project "$@") (deploy.sh --dry-run prints this plan)" >&2
bash "$OFFVIA_PLAN"
