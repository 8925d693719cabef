#!/usr/bin/env bash
# Installs the benchmark's Python venv (.local/venv-bench): apache-beam for the lab's pipeline on the DirectRunner and
# matplotlib for the chart, pinned. Skipped when the pins are already installed; an interrupted install is redone.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../deploy/local/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../deploy/local/lib.sh"

VENV="${OFFVIA_VENV_BENCH:-$OFFVIA_LOCAL_DIR/venv-bench}"
# apache-beam 2.77 supports Python 3.10-3.13; matplotlib for the PNG chart (offline, Agg backend).
PINS="apache-beam==2.77.0 matplotlib==3.11.2"

offvia_install_venv "bench venv" "$VENV" "$PINS" 'import apache_beam, matplotlib'
