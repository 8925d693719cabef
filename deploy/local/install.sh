#!/usr/bin/env bash
# Installs what the local stack needs, skipping each part that is already done: npm dependencies, Node.js 22 (the
# deployed runtime's major, from the npm registry into .local/node22), the bqemulator BigQuery emulator in
# .local/venv-bq (pinned, see docs/local-stack.md; patched so it does not grow without bound and keeps idle
# connections longer than Node's clients, see patch_bqemulator_all) with DuckDB's spatial extension, and
# checks for the tools the machine must already have (gcloud with the Pub/Sub and Firestore emulators, Java), and
# Debian's Chromium for the dashboard's browser test.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

check_prerequisites() {
  local missing=()
  command -v node >/dev/null || missing+=("node (Node.js 20 or later; install.sh adds Node.js 22 for the stack and tests)")
  command -v npm >/dev/null || missing+=("npm")
  command -v curl >/dev/null || missing+=("curl (apt-get install curl)")
  command -v "${OFFVIA_PYTHON:-python3}" >/dev/null || missing+=("${OFFVIA_PYTHON:-python3} (Python >= 3.10 with venv)")
  command -v java >/dev/null || missing+=("java (a Java runtime >= 11, e.g. apt-get install default-jre-headless)")
  if ! command -v gcloud >/dev/null; then
    missing+=("gcloud (the Google Cloud CLI)")
  else
    local sdk_root
    sdk_root="$(offvia_sdk_root)"
    [[ -d "$sdk_root/platform/pubsub-emulator" ]] ||
      missing+=("gcloud Pub/Sub emulator component ($sdk_root/platform/pubsub-emulator; apt-get install google-cloud-cli-pubsub-emulator or gcloud components install pubsub-emulator)")
    [[ -d "$sdk_root/platform/cloud-firestore-emulator" ]] ||
      missing+=("gcloud Firestore emulator component ($sdk_root/platform/cloud-firestore-emulator; apt-get install google-cloud-cli-firestore-emulator or gcloud components install cloud-firestore-emulator)")
  fi
  if ((${#missing[@]} > 0)); then
    offvia_log "ERROR: the local stack needs these, which are missing:"
    local item
    for item in "${missing[@]}"; do
      printf '  - %s\n' "$item" >&2
    done
    exit 1
  fi
}

install_npm_dependencies() {
  local stamp="$OFFVIA_ROOT/node_modules/.package-lock.json"
  if [[ -f "$stamp" && ! "$OFFVIA_ROOT/package-lock.json" -nt "$stamp" ]]; then
    offvia_log "npm dependencies: up to date, skipped"
    return
  fi
  offvia_log "npm dependencies: running npm ci"
  (cd "$OFFVIA_ROOT" && npm ci --no-audit --no-fund)
}

# Node.js $OFFVIA_NODE_MAJOR (the deployed runtime's major) into $OFFVIA_NODE_DIR, from the npm registry: the `node`
# package installs the official binary for this platform. Skipped when that binary already answers with the major;
# built once in the user cache directory (lib.sh: offvia_cached_dir) and linked from .local.
install_node_runtime() {
  if node_runtime_ready "$OFFVIA_NODE_DIR"; then
    offvia_log "Node.js $OFFVIA_NODE_MAJOR: installed ($("$OFFVIA_NODE_BIN/node" --version)), skipped"
    return
  fi
  offvia_cached_dir "node$OFFVIA_NODE_MAJOR" "$OFFVIA_NODE_DIR" "node@$OFFVIA_NODE_MAJOR" node_runtime_ready build_node_runtime
}

# Whether DIR holds a Node.js binary that answers with the major.
node_runtime_ready() {
  local bin="$1/node_modules/node/bin/node" version
  [[ -x "$bin" ]] || return 1
  version="$("$bin" --version 2>/dev/null)" || return 1
  [[ "$version" == "v$OFFVIA_NODE_MAJOR."* ]]
}

build_node_runtime() {
  local dir=$1 version
  offvia_log "Node.js $OFFVIA_NODE_MAJOR: installing node@$OFFVIA_NODE_MAJOR into ${dir#"$OFFVIA_ROOT"/}"
  rm -rf "$dir"
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-save --no-package-lock --no-audit --no-fund "node@$OFFVIA_NODE_MAJOR" >&2
  version="$("$dir/node_modules/node/bin/node" --version)" || offvia_die "the node@$OFFVIA_NODE_MAJOR package installed no binary"
  [[ "$version" == "v$OFFVIA_NODE_MAJOR."* ]] || offvia_die "node@$OFFVIA_NODE_MAJOR installed $version"
  offvia_log "Node.js $OFFVIA_NODE_MAJOR: installed $version"
}

install_bqemulator() {
  # bin/bqemulator is what the stack runs: its absence means a broken venv, whatever the marker says.
  [[ -x "$OFFVIA_VENV_BQ/bin/bqemulator" ]] || rm -f "$OFFVIA_VENV_BQ/.offvia-pins"
  # The patches applied afterwards are part of the cached venv's key: a changed patch builds a fresh venv.
  offvia_install_venv bqemulator "$OFFVIA_VENV_BQ" "$OFFVIA_BQ_PINS" "" \
    "$(cat "$OFFVIA_ROOT"/deploy/local/bqemulator-*.patch | sha256sum | cut -d' ' -f1)"
}

# Local patches to bqemulator 1.4.0, each applied once to exactly the file it was written for (checked by SHA-256):
# any other content fails the install, so a changed pin is reviewed rather than silently left unpatched.
# - deploy/local/bqemulator-no-auto-snapshots.patch: bqemulator copies the whole table into a time-travel snapshot
#   after every write (insertAll, DML, load, Storage Write commit) and keeps each copy for its retention (7 days by
#   default), so its memory grows with every insert, by the table's size, without bound. Patched, it takes no such
#   snapshot when time travel is off (BQEMU_TIME_TRAVEL_RETENTION_DAYS=0, which stack.sh sets; lib.sh:
#   OFFVIA_BQEMU_ENV).
# - deploy/local/bqemulator-keep-alive.patch: its HTTP server closes idle connections after uvicorn's default 5 s,
#   the same idle time as Node's keep-alive agent, so a client could send a request on a socket the server was
#   closing ("socket hang up"); patched, the server keeps them 65 s.
# Usage: patch_bqemulator LABEL FILE (relative to site-packages) PATCH SHA256_ORIGINAL SHA256_PATCHED
patch_bqemulator() {
  local label=$1 rel=$2 patch_file=$3 original=$4 patched=$5 site file sum
  site="$(compgen -G "$OFFVIA_VENV_BQ/lib/python3.*/site-packages" | head -n 1)" ||
    offvia_die "no site-packages in ${OFFVIA_VENV_BQ}"
  file="$site/$rel"
  [[ -f "$file" ]] || offvia_die "bqemulator has no ${rel}: the $label patch does not apply to this version"
  sum="$(sha256sum "$file" | cut -d' ' -f1)"
  case "$sum" in
    "$patched")
      offvia_log "bqemulator $label patch: applied, skipped"
      return
      ;;
    "$original") ;;
    *) offvia_die "bqemulator $label patch: ${file#"$OFFVIA_ROOT"/} is not the file the patch was written for (sha256 $sum); review ${patch_file#"$OFFVIA_ROOT"/} against it" ;;
  esac
  patch --quiet --forward -p1 -d "$site" <"$patch_file" || offvia_die "bqemulator $label patch: patch failed"
  sum="$(sha256sum "$file" | cut -d' ' -f1)"
  [[ "$sum" == "$patched" ]] || offvia_die "bqemulator $label patch: unexpected result (sha256 $sum)"
  offvia_log "bqemulator $label patch: applied to ${file#"$OFFVIA_ROOT"/}"
}

patch_bqemulator_all() {
  patch_bqemulator snapshot bqemulator/versioning/snapshots.py \
    "$OFFVIA_ROOT/deploy/local/bqemulator-no-auto-snapshots.patch" \
    a0970701f093d8b555fb1c1ac37d2a80027cda58be8d321d413fd1dd1c475d5a \
    84c706ba432b084c146be4ce291d629c1c650a4b5b37a949204ed908e7721ce9
  patch_bqemulator keep-alive bqemulator/server.py \
    "$OFFVIA_ROOT/deploy/local/bqemulator-keep-alive.patch" \
    f443c875aad963f0b16ebdf9d26261c2e9692f717b339357d2781e1eee569939 \
    d7d1a29b9c4ff1a2f914c1639cb1c5efee5ad59972817dc9d9d3f4751a0bd792
}

# bqemulator refuses to start without DuckDB's spatial extension, which DuckDB would download from a site that is
# unreachable here; the duckdb-extension-spatial wheel ships it, and DuckDB looks for it under $HOME/.duckdb.
install_spatial_extension() {
  local source_file target_dir target_file
  source_file="$(compgen -G "$OFFVIA_VENV_BQ/lib/python3.*/site-packages/duckdb_extension_spatial/extensions/$OFFVIA_DUCKDB_VERSION/spatial.duckdb_extension" | head -n 1)" ||
    offvia_die "the duckdb-extension-spatial wheel in ${OFFVIA_VENV_BQ} has no spatial.duckdb_extension for DuckDB $OFFVIA_DUCKDB_VERSION"
  target_dir="$HOME/.duckdb/extensions/$OFFVIA_DUCKDB_VERSION/linux_amd64"
  target_file="$target_dir/spatial.duckdb_extension"
  if [[ -f "$target_file" ]] && cmp -s "$source_file" "$target_file"; then
    offvia_log "DuckDB spatial extension: in place, skipped"
    return
  fi
  offvia_log "DuckDB spatial extension: copying to $target_dir"
  mkdir -p "$target_dir"
  # Copy then rename, so an emulator starting meanwhile never loads a half-written file.
  cp "$source_file" "$target_file.tmp.$$"
  mv -f "$target_file.tmp.$$" "$target_file"
}

# The dashboard's browser test (test/e2e/dashboard.test.ts) drives Debian's Chromium: no browser can be downloaded
# at install time here. Installed with apt-get when missing and this runs as root; otherwise a warning, and the test
# skips itself (with CI=true it fails instead).
install_chromium() {
  if [[ -x /usr/bin/chromium ]]; then
    offvia_log "chromium: /usr/bin/chromium present, skipped"
    return
  fi
  if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null; then
    offvia_log "WARNING: /usr/bin/chromium is missing (apt-get install chromium as root); the dashboard browser test will skip, or fail with CI=true"
    return
  fi
  offvia_log "chromium: apt-get install chromium"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }; then
    offvia_log "WARNING: apt-get install chromium failed; the dashboard browser test will skip, or fail with CI=true"
  fi
}

main() {
  local started_ms
  started_ms="$(offvia_now_ms)"
  check_prerequisites
  install_npm_dependencies
  install_node_runtime
  install_bqemulator
  patch_bqemulator_all
  install_spatial_extension
  install_chromium
  offvia_log "install: done in $(($(offvia_now_ms) - started_ms)) ms"
}

main "$@"
