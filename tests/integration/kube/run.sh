#!/usr/bin/env bash
# tests/integration/kube/run.sh - the Kubernetes client's integration tests
# against the real control plane of e2e/local.
#
# Uses the environment in $MESHSCALER_E2E_STATE when it is up; otherwise brings
# one up in a private state dir and always brings it down again (trap). Builds
# the test binaries into $MS_BUILD_DIR (default build-kube-it) unless present.
# Note: kube_it_watch stops and restarts the kube-apiserver of the environment
# it runs against (same ports, same etcd data).
#
# kube_it_deadwatch runs tests/tools/faultproxy.py (python3) between an
# informer and the API server; MS_KUBE_IT_SLOW=1 adds its 6-minute check of
# the default watch idle timeout.
#
# kube_it_review starts a TLS metrics server with the controller's authorizer
# and scrapes it with ServiceAccount tokens (TokenReview, SubjectAccessReview).
#
# Output: one line per check, figures as "#" lines, then `N passed, N failed`.
# Exit status 1 on any failure. MS_KUBE_IT="auth watch" runs only those tests.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
LOCAL="$REPO/e2e/local"
BUILD="${MS_BUILD_DIR:-$REPO/build-kube-it}"
TESTS="${MS_KUBE_IT:-auth scale watch deadwatch lease memory review}"
passed=0
failed=0
started_env=0

finish() {
  local rc=$?
  if [ "$started_env" -eq 1 ]; then
    if [ "$failed" -gt 0 ]; then
      for f in "$MESHSCALER_E2E_STATE"/logs/kube-apiserver*.log; do
        [ -e "$f" ] && { echo "--- last lines of $(basename "$f")"; tail -n 10 "$f"; }
      done
    fi
    "$LOCAL" down >/dev/null 2>&1 || true
    rm -f "$MESHSCALER_E2E_STATE.up.log"
  fi
  [ "$rc" -eq 0 ] || [ "$failed" -gt 0 ] || failed=$((failed + 1))
  echo "$passed passed, $failed failed"
  if [ "$failed" -eq 0 ]; then exit 0; else exit 1; fi
}
trap finish EXIT
trap 'exit 130' INT TERM

# 1. The test binaries.
need_build=0
for t in $TESTS; do [ -x "$BUILD/tests/integration/kube/kube_it_$t" ] || need_build=1; done
if [ "$need_build" -eq 1 ] || [ -n "${MS_KUBE_IT_REBUILD:-}" ]; then
  echo "# building the integration tests in $BUILD"
  gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S "$REPO" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE="${MS_BUILD_TYPE:-Debug}" >/dev/null \
    && cmake --build "$BUILD" -j "$(nproc)" --target kube_it_auth kube_it_watch kube_it_scale \
         kube_it_lease kube_it_lease_candidate kube_it_memory kube_it_deadwatch kube_it_review >/dev/null \
    || { echo "FAIL - build of the integration tests"; failed=1; exit 1; }
fi

# 2. The control plane: one that is up, or our own.
if [ -n "${MESHSCALER_E2E_STATE:-}" ] && "$LOCAL" status >/dev/null 2>&1; then
  echo "# using the running environment in $MESHSCALER_E2E_STATE"
else
  export MESHSCALER_E2E_STATE="$(mktemp -d /tmp/meshscaler-kube-it.XXXXXX)"
  started_env=1
  echo "# bringing up a control plane in $MESHSCALER_E2E_STATE"
  if ! "$LOCAL" up --no-node >"$MESHSCALER_E2E_STATE.up.log" 2>&1; then
    tail -n 20 "$MESHSCALER_E2E_STATE.up.log"
    echo "FAIL - e2e/local up"
    failed=1
    exit 1
  fi
fi
eval "$("$LOCAL" env)"
export MS_IT_ADMIN_KUBECONFIG="$KUBECONFIG"
export MS_IT_RESTRICTED_KUBECONFIG="$MESHSCALER_E2E_RESTRICTED_KUBECONFIG"
export MS_IT_KUBECTL="$KUBECTL"
export MS_IT_APISERVER_SH="$HERE/apiserver.sh"
export MS_IT_SRCDIR="$HERE"
export MS_IT_BINDIR="$BUILD/tests/integration/kube"

# 3. The tests, one binary each; every "ok"/"FAIL" line is a check.
for t in $TESTS; do
  bin="$MS_IT_BINDIR/kube_it_$t"
  out="$(mktemp)"
  start=$SECONDS
  timeout 600 "$bin" 2>&1 | tee "$out"
  rc="${PIPESTATUS[0]}"
  p="$(grep -c '^ok ' "$out")"; f="$(grep -c '^FAIL ' "$out")"
  passed=$((passed + p)); failed=$((failed + f))
  if [ "$rc" -eq 77 ]; then
    echo "FAIL - kube_it_$t skipped itself although the environment is set"; failed=$((failed + 1))
  elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "FAIL - kube_it_$t exited with status $rc"; failed=$((failed + 1))
  fi
  echo "# kube_it_$t took $((SECONDS - start)) s"
  rm -f "$out"
done
