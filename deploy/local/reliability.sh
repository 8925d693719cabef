#!/usr/bin/env bash
# The reliability harness (npm run reliability): checks the flags first, so a typo fails at once instead of after
# the install and the stack's start-up, then runs deploy/local/reliability.ts on a fresh stack (with-stack.sh), the
# BigQuery emulator file-backed and the Firestore emulator behind its TCP gate (the outage scenarios need both).
# Usage: reliability.sh [FLAGS...]   (--help for the flags; run from the repository root, as npm does)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# 0: good; 10: --help, the usage is printed; 2: a usage error, printed.
check_status=0
node --import tsx "$HERE/reliability/check-args.ts" "$@" || check_status=$?
case "$check_status" in
  0) ;;
  10) exit 0 ;;
  *) exit "$check_status" ;;
esac

OFFVIA_BQ_PERSISTENT=1 OFFVIA_FIRESTORE_GATE=1 exec bash "$HERE/with-stack.sh" \
  node --import tsx "$HERE/reliability.ts" "$@"
