#!/usr/bin/env bash
# tests/integration/image/run.sh - the controller's image, built from ./Dockerfile and
# run with the local Docker engine (e2e/local starts and stops it): its user, labels
# and entrypoint; `version`, `decide` and a refused `controller` on a read-only root
# with no capabilities; then the controller itself in --dry-run against the local
# cluster's API server and Prometheus, its /readyz answered, and a clean SIGTERM exit
# as PID 1. Prints the image's size and its packages.
#
# Needs the environment of e2e/local (eval "$(e2e/local env)").
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
: "${MESHSCALER_E2E_STATE:?run inside the environment of e2e/local}"
LOCAL="$root/e2e/local"

# pass, fail, check
# shellcheck source-path=SCRIPTDIR source=../../lib/check.sh
. "$root/tests/lib/check.sh"
note() { echo "     $*"; }

CID=
finish() {
  [ -n "$CID" ] && docker rm -f "$CID" >/dev/null 2>&1
  "$LOCAL" docker stop >/dev/null 2>&1
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ] || exit 1
}
trap finish EXIT

eval "$("$LOCAL" image meshscaler 2>/dev/null | grep '^MESHSCALER_IMAGE=')"
[ -n "${MESHSCALER_IMAGE:-}" ] || { fail "build the image from ./Dockerfile"; exit 1; }
pass "build the image from ./Dockerfile ($MESHSCALER_IMAGE)"
eval "$("$LOCAL" docker start 2>/dev/null | grep '^DOCKER_HOST=')"
export DOCKER_HOST
docker() { /usr/bin/docker "$@"; }
check "the Docker engine answers" docker version
I="$MESHSCALER_IMAGE"

inspect() { docker image inspect -f "$1" "$I"; }
version="$(sed -n 's/^project(meshscaler VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")"
check "runs as the fixed non-root user 65532:65532" test "$(inspect '{{.Config.User}}')" = "65532:65532"
check "entrypoint is the binary itself (no shell)" test "$(inspect '{{json .Config.Entrypoint}}')" = '["/usr/bin/meshscaler"]'
check "default command is controller" test "$(inspect '{{json .Config.Cmd}}')" = '["controller"]'
check "OCI label version = $version" test "$(inspect '{{index .Config.Labels "org.opencontainers.image.version"}}')" = "$version"
check "OCI label revision is set" test -n "$(inspect '{{index .Config.Labels "org.opencontainers.image.revision"}}')"
check "OCI label source is set" test -n "$(inspect '{{index .Config.Labels "org.opencontainers.image.source"}}')"
size="$(inspect '{{.Size}}')"
note "(size: $((size / 1000000)) MB uncompressed, $(inspect '{{len .RootFS.Layers}}') layers)"

RUN=(docker run --rm --read-only --cap-drop ALL --security-opt no-new-privileges --network none)
check "meshscaler version on a read-only root, no capabilities, no network" \
  grep -qx "meshscaler $version" <<<"$("${RUN[@]}" "$I" version 2>&1)"
decided="$("${RUN[@]}" -i "$I" decide < "$root/tests/scenarios/scale-up-on-sidecar.json" 2>&1)"
check "meshscaler decide reads a scenario from stdin" grep -q '"desiredReplicas"' <<<"$decided"
"${RUN[@]}" "$I" controller > /dev/null 2>"$MESHSCALER_E2E_STATE/image-controller.err"
rc=$?
check "controller without --prometheus-url exits 2 with the reason" \
  bash -c "[ $rc -eq 2 ] && grep -q 'prometheus-url' '$MESHSCALER_E2E_STATE/image-controller.err'"

# The controller from the image, against the real API server and Prometheus (host
# network: both listen on this host), with the restricted identity's kubeconfig.
hport="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
mport="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
kc="$MESHSCALER_E2E_STATE/image.kubeconfig"
cp "$MESHSCALER_E2E_RESTRICTED_KUBECONFIG" "$kc" && chmod 644 "$kc"
CID="$(docker run -d --read-only --cap-drop ALL --security-opt no-new-privileges --network host \
  -v "$kc:/etc/meshscaler/kubeconfig:ro" "$I" controller --kubeconfig /etc/meshscaler/kubeconfig \
  --prometheus-url "$PROMETHEUS_URL" --dry-run --health-probe-bind-address "127.0.0.1:$hport" \
  --metrics-bind-address "127.0.0.1:$mport" 2>&1)"
readyz() { curl -sf --max-time 2 "http://127.0.0.1:$hport/readyz" >/dev/null; }
ok=0
for _ in $(seq 1 60); do readyz && { ok=1; break; }; sleep 0.5; done
check "the controller in the image syncs with the API server (/readyz 200)" test "$ok" = 1
check "its /metrics answers" bash -c "curl -sf 'http://127.0.0.1:$mport/metrics' | grep -q '^meshscaler_leader'"
t0=$(date +%s.%N)
docker stop -t 15 "$CID" >/dev/null 2>&1
code="$(docker inspect -f '{{.State.ExitCode}}' "$CID" 2>/dev/null)"
stop_s="$(python3 -c "import time; print('%.1f' % (time.time() - $t0))")"
check "SIGTERM as PID 1: exit 0 (after ${stop_s} s)" test "$code" = 0
[ "$code" = 0 ] || docker logs "$CID" 2>&1 | tail -n 5
docker rm "$CID" >/dev/null 2>&1; CID=

note "packages in the image: $(docker run --rm --network none --entrypoint dpkg-query "$I" -W -f '${Package}\n' 2>/dev/null | wc -l)"
note "largest: $(docker run --rm --network none --entrypoint dpkg-query "$I" -W -f '${Installed-Size}\t${Package}\n' 2>/dev/null \
  | sort -rn | head -n 8 | awk '{printf "%s %.1fMB, ", $2, $1/1024}')"
# The verdict is the script's last status: an EXIT trap does not set it, and the
# `| head` above may end with SIGPIPE under pipefail.
[ "$failed" -eq 0 ]
