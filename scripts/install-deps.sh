#!/usr/bin/env bash
# Install the Debian packages meshscaler needs, only those missing.
#
#   scripts/install-deps.sh [build] [fuzz] [valgrind] [load]   (default: build)
#
# build:    compiler, CMake, Ninja, pkg-config and the fixed libraries
#           (libcurl, cJSON, libyaml, libwebsockets) plus cmocka and faketime
#           (libfaketime: the controller's wall-clock step test)
# fuzz:     clang and its runtime for libFuzzer
# valgrind: valgrind
# load:     HAProxy, python3 and curl for e2e/lab/load/check.sh
# Installs with apt-get as root; otherwise names what is missing and fails.
set -euo pipefail

declare -A groups=(
  [build]="gcc libc6-dev cmake ninja-build pkg-config libcurl4-openssl-dev libcjson-dev libyaml-dev libwebsockets-dev libcmocka-dev faketime"
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
# The package lists may be absent or stale on a fresh machine.
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
