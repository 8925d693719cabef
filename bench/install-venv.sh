#!/usr/bin/env bash
# Installs the benchmark's Python venv (.local/venv-bench): apache-beam for the lab's pipeline on the DirectRunner and
# matplotlib for the chart, pinned. Skipped when the pins are already installed; an interrupted install is redone.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../deploy/local/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../deploy/local/lib.sh"

VENV="${OFFVIA_VENV_BENCH:-$OFFVIA_LOCAL_DIR/venv-bench}"
# apache-beam 2.77 supports Python 3.10-3.13; matplotlib for the PNG chart (offline, Agg backend).
PINS="apache-beam==2.77.0 matplotlib==3.11.2"

python="${OFFVIA_PYTHON:-python3}"
marker="$VENV/.offvia-pins"
wanted="$("$python" -c 'import sys; print("python%d.%d" % sys.version_info[:2])') $PINS"
if [[ -x "$VENV/bin/python" && -f "$marker" && "$(cat "$marker")" == "$wanted" ]]; then
  offvia_log "bench venv: installed ($wanted), skipped"
  exit 0
fi
offvia_log "bench venv: installing $PINS into ${VENV#"$OFFVIA_ROOT"/} (about two minutes)"
rm -rf "$VENV"
mkdir -p "$(dirname "$VENV")"
"$python" -m venv "$VENV"
# shellcheck disable=SC2086 # the pins are a word list on purpose
"$VENV/bin/pip" install --quiet $PINS
printf '%s' "$wanted" >"$marker"
