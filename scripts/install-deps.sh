#!/usr/bin/env bash
# Install the Debian packages meshscaler needs, only those missing.
#
#   scripts/install-deps.sh [build] [fuzz] [valgrind] [load]   (default: build)
#
# build:    compiler, CMake, Ninja, pkg-config and the fixed libraries
#           (libcurl, cJSON, libyaml, libwebsockets) plus cmocka and faketime
#           (libfaketime: the controller's wall-clock step test) and clang-format
#           (lint.format: the tree as clang-format 14 writes it)
# fuzz:     clang and its runtime for libFuzzer
# valgrind: valgrind
# load:     HAProxy, python3 and curl for e2e/lab/load/check.sh
# Installs with apt-get as root; otherwise names what is missing and fails.
set -euo pipefail

declare -A groups=(
  [build]="gcc libc6-dev cmake ninja-build pkg-config libcurl4-openssl-dev libcjson-dev libyaml-dev libwebsockets-dev libcmocka-dev faketime clang-format"
  [fuzz]="clang libclang-rt-14-dev"
  [valgrind]="valgrind"
  [load]="haproxy python3 curl"
)

wanted=()
for group in "${@:-build}"; do
  if [[ -z "${groups[$group]:-}" ]]; then
    echo "install-deps: unknown group '$group' (want: ${!groups[*]})" >&2
    exit 2
  fi
  wanted+=(${groups[$group]})
done

missing=()
for pkg in "${wanted[@]}"; do
  # dpkg-query answers "install ok installed" only for a fully installed package.
  if [[ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" != "install ok installed" ]]; then
    missing+=("$pkg")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

if [[ "$(id -u)" -ne 0 ]]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run as root, or: sudo apt-get install --no-install-recommends ${missing[*]}" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# apt's output goes to a log; a progress line (e2e/lib/progress.sh) shows its last line
# while it runs, and the log's end is shown if it fails.
PROGRESS_PREFIX="install-deps:" PROGRESS_FD=1
# shellcheck source=e2e/lib/progress.sh
. "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib/progress.sh"
log="$(mktemp "${TMPDIR:-/tmp}/install-deps.XXXXXX")"
# The package lists may be absent or stale on a fresh machine.
if ! progress_run "installing packages (apt-get update and install)" "~15 s-2 min" "nothing to do" "$log" \
    sh -c 'apt-get update -q && apt-get install -y -q --no-install-recommends "$@"' apt "${missing[@]}"; then
  tail -n 15 "$log" >&2
  echo "install-deps: apt-get failed (log: $log)" >&2
  exit 1
fi
rm -f "$log"
echo "install-deps: done"
