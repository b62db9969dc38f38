#!/usr/bin/env bash
# run.sh - HPA parity, live (issue 22, item 4): the real HPA controller of
# kube-controller-manager and a MeshAutoscaler in shadow mode (dryRun: true)
# on the same Deployment, whose pods run on the node, with the same metric and
# the same behavior; the test steps the metric and asserts that the two
# decide the same counts, allowing one sync of lag.
#
# The metric: parity_load{namespace=NS,workload="parity"}, a series this
# script serves (python3 http.server, scraped by the environment's Prometheus).
# The HPA reads it as an External metric through the real prometheus-adapter
# (e2e/local adapter, registered as v1beta1.external.metrics.k8s.io), whose
# rule asks Prometheus sum(parity_load{namespace="NS",workload="parity"}); the
# MeshAutoscaler's Prometheus metric is that same PromQL. Both: AverageValue
# 10, min 1, max 10, scaleUp Pods 2 per period (no window), scaleDown a 60 s
# window and Percent 100 per period, the default tolerance (0.1). The period
# is the HPA's sync period as kube-controller-manager runs it
# (--horizontal-pod-autoscaler-sync-period, 15 s unless e2e/local was given
# MESHSCALER_E2E_KCM_ARGS), and the MeshAutoscaler's syncPeriodSeconds equals
# it. The rate policies' period is one sync: in shadow mode meshscaler wrote
# no scale and so holds no scale events, while the HPA counts its own; over a
# period of one sync neither has an event left to count (docs/migration.md).
#
# Steps (value, from 2 replicas): 20 (settle: both 2, one period); 21.5 for 3 periods
# (ratio 1.075, inside the tolerance: neither moves); 75 (asks 8; the policy
# binds: 2 -> 4 -> 6 -> 8); 30 (asks 3; held by the 60 s window, then 3).
# A sampler reads the HPA, the MeshAutoscaler and the Deployment every second;
# the controller logs each sync (--log-level debug). Checks (timeline.py):
# each MeshAutoscaler sync decided a count the HPA's desired count held within
# one period of it; each HPA change was decided by the MeshAutoscaler within
# one period, or read by it as its current count (the HPA wrote it first, and
# the shadow steps on from the count the HPA set); the same sequence of counts
# less those; the HPA went 2, 4, 6, 8, 3 (the
# scenario did what it means to); both read the value set; status.hpaComparison
# counted at most one differing sync per HPA change. The timeline is printed.
#
# Needs the node (pods that run): under scripts/test.sh the integration
# suite's environment; alone, one is brought up here (e2e/local up, a machine
# singleton: run it under `flock /tmp/ms-node.lock`). Exits 77 in an
# environment without the node. Binary as tests/integration/controller.
# MS_E2E_KEEP=1 keeps the scratch directory. Ends with "N passed, N failed".
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
E2E_LOCAL="$root/e2e/local"
# shellcheck source-path=SCRIPTDIR source=../controller/lib.sh
source "$root/tests/integration/controller/lib.sh"

NAME=parity
WORK="$(mktemp -d "${TMPDIR:-/tmp}/meshscaler-e2e-parity.XXXXXX")"
OWN_ENV=0
ADAPTER=0
finish() {
  echo "$passed passed, $failed failed"
  [[ $failed -eq 0 ]]
}
cleanup() {
  ctl_stop_all >/dev/null
  exporter_stop
  e2e_stop_all
  [[ $ADAPTER == 1 ]] && "$E2E_LOCAL" adapter stop >/dev/null 2>&1
  local ns
  for ns in "${CREATED_NS[@]}"; do k delete namespace "$ns" --wait=false >/dev/null 2>&1; done
  if [[ $OWN_ENV == 1 ]]; then "$E2E_LOCAL" down >/dev/null 2>&1; rm -rf "$MESHSCALER_E2E_STATE"; fi
  if [[ "${MS_E2E_KEEP:-0}" == 1 || $failed -gt 0 ]]; then echo "logs kept in $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
abort() { fail "$*"; finish; exit 1; }

use_environment
if grep -qx 'WITH_NODE=0' "$MESHSCALER_E2E_STATE/ports.env" 2>/dev/null; then
  echo "parity: the environment in $MESHSCALER_E2E_STATE has no node (e2e/local up --no-node); the test needs pods that run"
  exit 77
fi
find_binary
# shellcheck disable=SC1091
. "$MESHSCALER_E2E_STATE/images.env" || abort "no images.env in $MESHSCALER_E2E_STATE"
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1

# hpa_sync_period : kube-controller-manager's --horizontal-pod-autoscaler-sync-period
# in whole seconds (its default, 15, when not given).
hpa_sync_period() {
  local pid
  pid="$(cat "$MESHSCALER_E2E_STATE/pids/kube-controller-manager.pid")" || return 1
  python3 - "/proc/$pid/cmdline" <<'PY'
import re, sys
args = open(sys.argv[1], "rb").read().decode().split("\0")
value = "15s"
for i, a in enumerate(args):
    if a == "--horizontal-pod-autoscaler-sync-period" and i + 1 < len(args):
        value = args[i + 1]
    elif a.startswith("--horizontal-pod-autoscaler-sync-period="):
        value = a.split("=", 1)[1]
m = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", value)
secs = int(m.group(1) or 0) * 60 + int(m.group(2) or 0) if m and value else 0
if secs < 1:
    sys.exit("kube-controller-manager's --horizontal-pod-autoscaler-sync-period=%s: want whole seconds such as 15s" % value)
print(secs)
PY
}
P="$(hpa_sync_period)" || abort "could not read the HPA's sync period"
note "the HPA's sync period: $P s (kube-controller-manager); the MeshAutoscaler's syncPeriodSeconds: $P"

for m in 00-namespace 10-crd 20-rbac; do
  k apply -f "$root/manifests/$m.yaml" >/dev/null || abort "apply manifests/$m.yaml"
done
k wait --for=condition=Established --timeout=30s crd/meshautoscalers.autoscaling.meshscaler.io >/dev/null ||
  abort "CRD not Established"
new_ns parity || abort "namespace"
exporter_start || abort "exporter not scraped by Prometheus"

# --- the metric: one series, served before the adapter lists it --------------------
PHASES="$WORK/phases"
: >"$PHASES"
# step NAME VALUE : serve VALUE, wait until Prometheus has it, mark the phase.
step() {
  series_set parity_load "$NS" "$NAME" "$2"
  publish
  echo "$PUBLISHED_AT $1 $2" >>"$PHASES"
  prom_wait "parity_load{namespace=\"$NS\",workload=\"$NAME\"} == $2" 15
}
series_set parity_load "$NS" "$NAME" 20
publish
prom_wait "parity_load{namespace=\"$NS\",workload=\"$NAME\"} == 20" 15 || abort "parity_load not in Prometheus"

cat >"$WORK/adapter.yaml" <<'YAML'
externalRules:
- seriesQuery: 'parity_load{namespace!="",workload!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
  name: {matches: "^parity_load$", as: "parity_load"}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
YAML
ADAPTER=1
"$E2E_LOCAL" adapter start "$WORK/adapter.yaml" --metrics-relist-interval=10s >"$WORK/adapter.out" 2>&1 ||
  { tail -n 15 "$WORK/adapter.out"; abort "e2e/local adapter start beside the node"; }
external_value() {
  k get --raw "/apis/external.metrics.k8s.io/v1beta1/namespaces/$NS/parity_load?labelSelector=workload%3D$NAME" 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["value"])' 2>/dev/null
}
is_external() { [[ "$(external_value)" == "$1" ]]; }
if wait_for 60 is_external 20; then
  ok "prometheus-adapter beside the node serves parity_load through the API server: $(external_value)"
else
  abort "external.metrics.k8s.io never served parity_load 20 (got '$(external_value)'; adapter log: $MESHSCALER_E2E_STATE/logs/prometheus-adapter.log)"
fi

# --- the target: pods that run on the node --------------------------------------------
k apply -n "$NS" -f - >/dev/null <<YAML || abort "Deployment refused"
apiVersion: apps/v1
kind: Deployment
metadata: {name: $NAME, labels: {app: $NAME}}
spec:
  replicas: 2
  selector: {matchLabels: {app: $NAME}}
  template:
    metadata: {labels: {app: $NAME}}
    spec:
      terminationGracePeriodSeconds: 1
      enableServiceLinks: false
      containers:
      - name: pause
        image: $PAUSE_IMAGE
        imagePullPolicy: Never
        resources: {requests: {cpu: 5m, memory: 8Mi}, limits: {memory: 16Mi}}
YAML
ready_is() { [[ "$(jget "$NS" deployment "$NAME" '{.status.readyReplicas}')" == "$1" ]]; }
if wait_for 120 ready_is 2; then ok "Deployment $NAME: 2 pods run on the node ($PAUSE_IMAGE)"
else abort "Deployment $NAME: $(jget "$NS" deployment "$NAME" '{.status.readyReplicas}') ready of 2 after 120 s"; fi

# --- the two autoscalers, with the same behavior ------------------------------------
behavior() {
  cat <<YAML
  behavior:
    scaleUp:
      stabilizationWindowSeconds: 0
      selectPolicy: Max
      policies: [{type: Pods, value: 2, periodSeconds: $P}]
    scaleDown:
      stabilizationWindowSeconds: 60
      selectPolicy: Max
      policies: [{type: Percent, value: 100, periodSeconds: $P}]
YAML
}
k apply -n "$NS" -f - >/dev/null <<YAML || abort "MeshAutoscaler refused"
apiVersion: autoscaling.meshscaler.io/v1alpha1
kind: MeshAutoscaler
metadata: {name: $NAME}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: $NAME}
  minReplicas: 1
  maxReplicas: 10
  dryRun: true
  syncPeriodSeconds: $P
  metrics:
  - name: load
    type: Prometheus
    prometheus: {query: 'sum(parity_load{namespace="{{namespace}}",workload="{{name}}"})'}
    target: {type: AverageValue, averageValue: "10"}
$(behavior)
YAML
k apply -n "$NS" -f - >/dev/null <<YAML || abort "HPA refused"
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: $NAME}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: $NAME}
  minReplicas: 1
  maxReplicas: 10
  metrics:
  - type: External
    external:
      metric: {name: parity_load, selector: {matchLabels: {workload: $NAME}}}
      target: {type: AverageValue, averageValue: "10"}
$(behavior)
YAML
MS_E2E_LOG_LEVEL=debug ctl_start live "$MESHSCALER_E2E_RESTRICTED_KUBECONFIG" --namespace "$NS" --sync-period "${P}s" ||
  abort "the controller never got ready"
bg "$WORK/samples.jsonl" "$WORK/sampler.err" python3 "$here/timeline.py" sample "$NS" "$NAME" "$EXPORTER_DIR/metrics"
SAMPLER_PID=$LAST_PID

# both_at N : the HPA and the MeshAutoscaler both want N.
both_at() {
  [[ "$(jget "$NS" hpa "$NAME" '{.status.desiredReplicas}')" == "$1" &&
     "$(jget "$NS" mas "$NAME" '{.status.desiredReplicas}')" == "$1" ]]
}
compared() {
  both_at 2 && [[ -n "$(jget "$NS" hpa "$NAME" '{.status.currentMetrics[0].external.current.averageValue}')" &&
                  "$(jget "$NS" mas "$NAME" '{.status.hpaComparison.syncs}')" -ge 1 ]] 2>/dev/null
}
t0=$SECONDS
wait_for $((4 * P + 30)) compared ||
  abort "settle: HPA '$(jget "$NS" hpa "$NAME" '{.status}')', MeshAutoscaler '$(jget "$NS" mas "$NAME" '{.status.desiredReplicas}')'"
echo "$(now) settle 20" >>"$PHASES"
sleep "$P"
step tolerance 21.5 || fail "tolerance: Prometheus never answered 21.5"
sleep $((3 * P))
step up 75 || fail "up: Prometheus never answered 75"
wait_for $((8 * P)) both_at 8 || fail "up: HPA $(jget "$NS" hpa "$NAME" '{.status.desiredReplicas}'), MeshAutoscaler $(jget "$NS" mas "$NAME" '{.status.desiredReplicas}') after $((8 * P)) s at 75 (want 8)"
sleep $((P + 3))
step down 30 || fail "down: Prometheus never answered 30"
wait_for $((60 + 8 * P)) both_at 3 || fail "down: HPA $(jget "$NS" hpa "$NAME" '{.status.desiredReplicas}'), MeshAutoscaler $(jget "$NS" mas "$NAME" '{.status.desiredReplicas}') at 30 (want 3)"
sleep $((P + 3))
echo "$(now) end -" >>"$PHASES"
stop_pid "$SAMPLER_PID"
jget "$NS" mas "$NAME" '{.status.hpaComparison}' >"$WORK/comparison.json"
ctl_stop live

python3 "$here/timeline.py" check "$WORK/samples.jsonl" "${CTL_ERR[live]:-$WORK/t-live.err}" "$PHASES" \
  "$WORK/comparison.json" "$P" "$NS" "$NAME" >"$WORK/check.out" 2>&1
cat "$WORK/check.out"
passed=$((passed + $(grep -c '^ok ' "$WORK/check.out")))
failed=$((failed + $(grep -c '^FAIL ' "$WORK/check.out")))
grep -q '^ok \|^FAIL ' "$WORK/check.out" || fail "timeline.py check printed no check (see above)"
note "parity took $((SECONDS - t0)) s from the autoscalers' creation"
finish
