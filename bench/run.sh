#!/usr/bin/env bash
# `npm run bench`: installs what the benchmark needs (the stack's parts, the bench venv with apache-beam and
# matplotlib), starts a fresh local stack, runs bench/run.ts inside it, and stops the stack again.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bash "$HERE/install-venv.sh"
exec bash "$HERE/../deploy/local/with-stack.sh" node --import tsx "$HERE/run.ts"
