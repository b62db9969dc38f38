#!/usr/bin/env bash
# e2e/smoke.sh — smoke test of the local test environment (e2e/local): a real
# kube-apiserver with kube-controller-manager, RBAC for the project's ClusterRole, and
# Prometheus scraping a real HAProxy exporter. It brings everything up in a state dir
# of its own, checks, and always brings it down again (trap), then checks that no
# process it started is left.
#
# Output: one line per check, then `N passed, N failed`. Exit status 1 on any failure.
set -euo pipefail

E2E_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$E2E_DIR/.." && pwd)"
LOCAL="$E2E_DIR/local"
# A private state dir, so a developer's running environment (e2e/.state) is untouched.
export MESHSCALER_E2E_STATE="${SMOKE_STATE:-$(mktemp -d /tmp/meshscaler-smoke.XXXXXX)}"
KUBECTL="$E2E_DIR/.bin/kubectl"
NS=smoke

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok   - $1"; }
fail() { failed=$((failed + 1)); echo "FAIL - $1${2:+: $2}"; }
# check NAME CMD...: one line for one check.
check() {
  local name="$1"; shift
  local out
  if out="$("$@" 2>&1)"; then pass "$name"; else fail "$name" "$(printf '%s' "$out" | tail -n 3 | tr '\n' ' ')"; fi
}
# eventually SECONDS CMD...: retry CMD every 0.5 s (controllers and scrapes are async).
eventually() {
  local secs="$1"; shift
  local deadline=$((SECONDS + secs))
  until "$@"; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.5
  done
}

# forbidden CMD...: CMD must fail (the API server refuses it).
forbidden() { ! "$@" >/dev/null 2>&1; }

STARTED_PIDS=""
down_done=0
bring_down() {
  [ "$down_done" -eq 0 ] || return 0
  down_done=1
  # Collect our PIDs first: after `down` the PID files are gone.
  STARTED_PIDS="$(cat "$MESHSCALER_E2E_STATE"/pids/*.pid 2>/dev/null | tr '\n' ' ' || true)"
  if [ "$failed" -gt 0 ] && [ -d "$MESHSCALER_E2E_STATE/logs" ]; then
    local f
    for f in "$MESHSCALER_E2E_STATE"/logs/*.log; do
      echo "--- last lines of $(basename "$f")"; tail -n 15 "$f"
    done
  fi
  "$LOCAL" down >/dev/null 2>&1 || true
}
on_exit() {
  local rc=$?
  if [ "$down_done" -eq 0 ]; then
    [ "$rc" -eq 0 ] || fail "smoke test aborted (exit $rc)"
    bring_down
    echo "$passed passed, $failed failed"
  fi
  rm -rf "$MESHSCALER_E2E_STATE"
  [ "$failed" -eq 0 ] || exit 1
}
trap on_exit EXIT
trap 'exit 130' INT TERM

# --- build and up ----------------------------------------------------------------------
# The first build on a fresh machine takes minutes: let its progress lines show (stderr).
t0=$SECONDS
if "$LOCAL" build >&2; then
  pass "build the control plane ($((SECONDS - t0)) s)"
else
  fail "build the control plane"
  exit 1
fi
t0=$SECONDS
if "$LOCAL" up > "$MESHSCALER_E2E_STATE.up.log" 2>&1; then
  pass "e2e/local up ($((SECONDS - t0)) s)"
else
  fail "e2e/local up" "$(tail -n 5 "$MESHSCALER_E2E_STATE.up.log" | tr '\n' ' ')"
  rm -f "$MESHSCALER_E2E_STATE.up.log"
  exit 1
fi
rm -f "$MESHSCALER_E2E_STATE.up.log"
eval "$("$LOCAL" env)"
K=("$KUBECTL" --kubeconfig "$KUBECONFIG")
R=("$KUBECTL" --kubeconfig "$MESHSCALER_E2E_RESTRICTED_KUBECONFIG")

# --- the API server -------------------------------------------------------------------
check "readyz says ok" test "$("${K[@]}" get --raw /readyz)" = ok
resources="$("${K[@]}" api-resources 2>&1 || true)"
check "api-resources lists apps/v1 deployments" grep -qE '^deployments +deploy +apps/v1 ' <<<"$resources"
check "api-resources lists coordination.k8s.io leases" grep -qE '^leases .*coordination.k8s.io/v1 ' <<<"$resources"

if [ -f "$REPO/manifests/crd.yaml" ]; then
  check "apply manifests/crd.yaml" "${K[@]}" apply -f "$REPO/manifests/crd.yaml"
  check "the CRD is established" "${K[@]}" wait --for=condition=Established --timeout=30s \
    crd/meshautoscalers.autoscaling.meshscaler.io
  check "restricted identity can list meshautoscalers" "${R[@]}" get meshautoscalers -A
  check "restricted identity can patch meshautoscalers/status" "${R[@]}" auth can-i patch \
    meshautoscalers.autoscaling.meshscaler.io --subresource=status -n "$NS"
  # An object shaped like SPEC.md's example must be accepted by the CRD's schema.
  check "a MeshAutoscaler like SPEC.md's example is accepted" "${K[@]}" apply -f - <<'EOF'
apiVersion: autoscaling.meshscaler.io/v1alpha1
kind: MeshAutoscaler
metadata: {name: api, namespace: default}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: api}
  minReplicas: 2
  maxReplicas: 40
  metrics:
  - name: sidecar
    type: SidecarConcurrency
    sidecarConcurrency: {proxy: envoy, limit: 100}
    target: {type: Utilization, averageUtilization: 70}
  - name: rps
    type: Prometheus
    prometheus: {query: 'sum(rate(http_requests_total{namespace="{{namespace}}",pod=~"{{podRegex}}"}[1m]))'}
    target: {type: AverageValue, averageValue: "120"}
  guardrails:
    downstream:
    - {name: edge-lb, usageQuery: 'sum(haproxy_frontend_current_sessions{proxy="edge"})', limit: 20000, perReplica: 40, maxUtilization: 0.7}
  fallback: {failureThreshold: 3, replicas: 6, mode: Static}
EOF
  check "restricted identity can write a MeshAutoscaler's status" "${R[@]}" -n default patch \
    meshautoscalers.autoscaling.meshscaler.io api --subresource=status --type=merge \
    -p '{"status":{"desiredReplicas":3}}'
  check "restricted identity cannot change a MeshAutoscaler's spec" forbidden "${R[@]}" -n default \
    patch meshautoscalers.autoscaling.meshscaler.io api --type=merge -p '{"spec":{"maxReplicas":3}}'
fi

# --- a Deployment through kube-controller-manager --------------------------------------
check "create namespace $NS" "${K[@]}" create namespace "$NS"
check "apply a Deployment" "${K[@]}" apply -f - <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: $NS}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: registry.invalid/web:1}]
EOF
rs_count() { [ "$("${K[@]}" -n "$NS" get rs -l app=web -o name | wc -l)" -ge 1 ]; }
check "the Deployment gets a ReplicaSet" eventually 30 rs_count
pods2() { [ "$("${K[@]}" -n "$NS" get deploy web -o 'jsonpath={.status.replicas}')" = 2 ]; }
check "the ReplicaSet creates 2 pods (status.replicas=2)" eventually 30 pods2

scale_get() { "${K[@]}" get --raw "/apis/apps/v1/namespaces/$NS/deployments/web/scale"; }
check "GET scale subresource answers spec.replicas=2" grep -q '"replicas":2' <<<"$(scale_get)"
check "PATCH scale subresource to 3 (admin)" "${K[@]}" -n "$NS" patch deployment web \
  --subresource=scale --type=merge -p '{"spec":{"replicas":3}}'
pods3() { [ "$("${K[@]}" -n "$NS" get deploy web -o 'jsonpath={.status.replicas}')" = 3 ]; }
check "the controller manager follows to 3 replicas" eventually 30 pods3

# --- the restricted identity (manifests/rbac.yaml) ---------------------------------------
check "restricted identity is the meshscaler ServiceAccount" \
  grep -q 'system:serviceaccount:meshscaler-system:meshscaler' <<<"$("${R[@]}" auth whoami 2>&1)"
check "restricted identity can GET scale" "${R[@]}" -n "$NS" get --raw \
  "/apis/apps/v1/namespaces/$NS/deployments/web/scale"
check "restricted identity can PATCH scale to 4" "${R[@]}" -n "$NS" patch deployment web \
  --subresource=scale --type=merge -p '{"spec":{"replicas":4}}'
check "restricted identity can list pods" "${R[@]}" -n "$NS" get pods
check "restricted identity can create a lease" "${R[@]}" -n meshscaler-system create -f - <<EOF
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: meshscaler-smoke}
spec: {holderIdentity: smoke}
EOF
check "restricted identity cannot list secrets" forbidden "${R[@]}" get secrets -A
check "restricted identity cannot patch the Deployment itself" forbidden "${R[@]}" -n "$NS" \
  patch deployment web --type=merge -p '{"metadata":{"labels":{"x":"y"}}}'
check "restricted identity cannot delete pods" forbidden "${R[@]}" -n "$NS" delete pods --all

# --- Prometheus scrapes HAProxy ---------------------------------------------------------------
check "start haproxy with exporter, added to file_sd" "$LOCAL" haproxy start smoke --maxconn 500 --scrape
# query PROMQL: print the first sample value of an instant query (empty when none).
query() {
  curl -sf --get "$PROMETHEUS_URL/api/v1/query" --data-urlencode "query=$1" \
    | grep -o '"value":\[[^]]*\]' | head -n 1 | sed 's/.*,"\(.*\)"\]/\1/'
}
up1() { [ "$(query 'up{job="targets",haproxy="smoke"}')" = 1 ]; }
# The first scrape comes about 5 s after Prometheus starts (TOOLCHAIN.md), plus file_sd.
check "prometheus reports up==1 for the haproxy target" eventually 30 up1
limit500() { [ "$(query 'haproxy_frontend_limit_sessions{haproxy="smoke",proxy="smoke"}')" = 500 ]; }
check "prometheus has haproxy_frontend_limit_sessions=500" eventually 15 limit500

# --- down ---------------------------------------------------------------------------------
bring_down
check "e2e/local down removed the state" test ! -e "$MESHSCALER_E2E_STATE/ports.env"
# alive PID: the process exists and is not a zombie. Our processes are reparented to
# PID 1 when e2e/local exits, and an exited one stays a zombie until PID 1 reaps it.
alive() { [ -r "/proc/$1/stat" ] && [ "$(sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
left=""
for pid in $STARTED_PIDS; do
  if alive "$pid"; then left+="$pid($(tr '\0' ' ' < "/proc/$pid/cmdline" | cut -c1-60)) "; fi
done
check "no started process remains (pids: ${STARTED_PIDS:-none})" test -z "$left"
[ -z "$left" ] || echo "    left running: $left"
[ -n "$STARTED_PIDS" ] || fail "recorded started PIDs" "none found"

echo "$passed passed, $failed failed"
