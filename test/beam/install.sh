#!/usr/bin/env bash
# Installs Apache Beam's Python SDK into .local/venv-beam for the differential test against Beam's TestStream
# (test/beam/reference_runner.py), skipping the install when the venv already holds these exact pins. About 160 s
# on a fresh machine (once per clone); needs Python >= 3.10 with venv and access to the Python package index.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../../deploy/local/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../deploy/local/lib.sh"

OFFVIA_VENV_BEAM="$OFFVIA_LOCAL_DIR/venv-beam"
# The Beam release the differential test was written against; changing it reinstalls (the marker holds this text).
OFFVIA_BEAM_PINS="apache-beam==2.77.0"

main() {
  local python="${OFFVIA_PYTHON:-python3}"
  local marker="$OFFVIA_VENV_BEAM/.offvia-pins"
  local wanted started_ms
  started_ms="$(offvia_now_ms)"
  wanted="$("$python" -c 'import sys; print("python%d.%d" % sys.version_info[:2])') $OFFVIA_BEAM_PINS"
  if [[ -x "$OFFVIA_VENV_BEAM/bin/python" && -f "$marker" && "$(cat "$marker")" == "$wanted" ]]; then
    offvia_log "apache-beam: installed ($wanted), skipped"
    return
  fi
  offvia_log "apache-beam: installing $OFFVIA_BEAM_PINS into ${OFFVIA_VENV_BEAM#"$OFFVIA_ROOT"/} (about 160 s)"
  rm -rf "$OFFVIA_VENV_BEAM"
  mkdir -p "$OFFVIA_LOCAL_DIR"
  "$python" -m venv "$OFFVIA_VENV_BEAM"
  # shellcheck disable=SC2086 # the pins are a word list on purpose
  "$OFFVIA_VENV_BEAM/bin/pip" install --quiet --disable-pip-version-check $OFFVIA_BEAM_PINS
  "$OFFVIA_VENV_BEAM/bin/python" -c 'import apache_beam; from apache_beam.testing.test_stream import TestStream'
  # Written last, so an interrupted install is redone next time.
  printf '%s' "$wanted" >"$marker"
  offvia_log "apache-beam: installed in $(($(offvia_now_ms) - started_ms)) ms"
}

main "$@"
