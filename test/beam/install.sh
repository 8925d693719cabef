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
  offvia_install_venv apache-beam "$OFFVIA_VENV_BEAM" "$OFFVIA_BEAM_PINS" \
    'import apache_beam; from apache_beam.testing.test_stream import TestStream'
}

main "$@"
