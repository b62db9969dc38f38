#!/usr/bin/env bash
# run.sh - end-to-end tests of `meshscaler controller` (issue 6) against the
# real local control plane (kube-apiserver, etcd, kube-controller-manager) and
# the real Prometheus of e2e/local. Metrics come from an exporter this script
# serves and Prometheus scrapes; the live controller runs with the restricted
# identity of manifests/20-rbac.yaml, so the ClusterRole is proven enough.
#
#   tests/integration/controller/run.sh              every test
#   tests/integration/controller/run.sh scaling dryrun   only those (in order)
#
# Tests: scaling reserve budget dryrun invalid leader pause latency failover timestep promfaults
# liveness behaviours handover oneround biglist (see t_*.sh).
# Environment: when KUBECONFIG and PROMETHEUS_URL are set (scripts/test.sh,
# or after eval "$(e2e/local env)") that environment is used and left up;
# otherwise one is brought up in a temporary MESHSCALER_E2E_STATE and torn
# down on exit.
# Binary: $MS_BUILD_DIR/meshscaler, else $MS_IT_BUILD/meshscaler (scripts/test.sh),
# else build-ctl-e2e (Sanitize) at the top of the repo, built here.
# MS_E2E_KEEP=1 keeps the scratch directory (logs of every controller).
# One line per check; ends with "N passed, N failed"; exits 1 on any failure.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
E2E_LOCAL="$root/e2e/local"
# shellcheck source=lib.sh
source "$here/lib.sh"
for t in "$here"/t_*.sh; do
  # shellcheck disable=SC1090
  source "$t"
done

ALL_TESTS=(scaling reserve budget dryrun invalid leader pause handover latency failover timestep promfaults liveness behaviours oneround biglist)
tests=("$@")
[[ ${#tests[@]} -gt 0 ]] || tests=("${ALL_TESTS[@]}")

WORK="$(mktemp -d "${TMPDIR:-/tmp}/meshscaler-e2e-ctl.XXXXXX")"
OWN_ENV=0
finish() {
  echo "$passed passed, $failed failed"
  [[ $failed -eq 0 ]]
}
cleanup() {
  ctl_stop_all >/dev/null
  # A test that stopped the shared Prometheus brings it back for the next runner.
  [[ "${PROM_STOPPED:-0}" == 1 ]] && prom_restart
  exporter_stop
  e2e_stop_all
  local ns
  for ns in "${CREATED_NS[@]}"; do k delete namespace "$ns" --wait=false >/dev/null 2>&1; done
  k delete clusterrole,clusterrolebinding "mse2e-readonly-$$" >/dev/null 2>&1
  if [[ $OWN_ENV == 1 ]]; then "$E2E_LOCAL" down >/dev/null 2>&1; rm -rf "$MESHSCALER_E2E_STATE"; fi
  if [[ "${MS_E2E_KEEP:-0}" == 1 || $failed -gt 0 ]]; then echo "logs kept in $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

abort() { fail "$*"; finish; exit 1; }

# --- the environment and the binary -----------------------------------------------
use_environment --no-node
RESTRICTED="$MESHSCALER_E2E_RESTRICTED_KUBECONFIG"
find_binary
if ! "$MS" controller --help >"$WORK/help.txt" 2>&1; then
  abort "'$MS controller --help' fails: $(head -n 2 "$WORK/help.txt" | tr '\n' ' ')"
fi
ok "meshscaler controller --help"
for flag in --kubeconfig --namespace --prometheus-url --sync-period --leader-elect \
  --leader-election-id --leader-election-namespace --metrics-bind-address \
  --health-probe-bind-address --dry-run --output --log-format --concurrent-syncs --config; do
  grep -q -- "$flag" "$WORK/help.txt" || fail "controller --help does not name $flag"
done
# Leak reports at exit fail ctl_stop; UBSan keeps going so later checks still say what broke.
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1

# --- shared set-up ------------------------------------------------------------------
for m in 00-namespace 10-crd 20-rbac; do
  k apply -f "$root/manifests/$m.yaml" >/dev/null || abort "apply manifests/$m.yaml"
done
k wait --for=condition=Established --timeout=30s crd/meshautoscalers.autoscaling.meshscaler.io >/dev/null ||
  abort "CRD not Established"
exporter_start || abort "exporter not scraped by Prometheus"

for t in "${tests[@]}"; do
  if ! declare -F "test_$t" >/dev/null; then fail "no test named $t"; continue; fi
  echo "--- $t"
  CURRENT_TEST=$t
  start=$SECONDS
  "test_$t"
  ctl_stop_all
  note "$t took $((SECONDS - start)) s"
done
for fig in "${LATENCY_FIGURES[@]}"; do echo "latency from a metric change to spec.replicas, $fig"; done
finish
