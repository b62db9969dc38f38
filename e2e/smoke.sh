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

# pass, fail, check, eventually (retrying every 0.5 s: controllers and scrapes are async)
CHECK_POLL=0.5
# shellcheck source-path=SCRIPTDIR source=../tests/lib/check.sh
. "$REPO/tests/lib/check.sh"

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
  rm -f "${SYSCTLS_SAVED:-}"
  [ "$failed" -eq 0 ] || exit 1
}
trap on_exit EXIT
trap 'exit 130' INT TERM

# The sysctls the node changes, as `up` found them (node/sysctl.saved, one "key value"
# per line); `down` must put back exactly those. They differ from the values at our
# start only when `up` first cleaned up after a node that died without `down`: that
# clean-up restores the values the dead node had found.
sysctl_values() { sysctl -n vm.overcommit_memory kernel.panic kernel.panic_on_oops net.ipv4.ip_forward | tr '\n' ' '; }
SYSCTLS_BEFORE="$(sysctl_values)"
SYSCTLS_SAVED="$MESHSCALER_E2E_STATE.sysctl.saved"
# sysctls_differ FILE: the keys of FILE whose value now differs, as "key=now(want)".
sysctls_differ() {
  local k v now
  while read -r k v; do
    now="$(sysctl -n "$k" 2>/dev/null || echo unreadable)"
    [ "$now" = "$v" ] || printf '%s=%s(want %s) ' "$k" "$now" "$v"
  done < "$1"
}

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
# A first run also installs the node's Go tools and builds the images: a progress line
# (e2e/lib/progress.sh, on stderr) shows up.log's last line while it runs.
PROGRESS_PREFIX="[smoke]"
# shellcheck source=e2e/lib/progress.sh
. "$E2E_DIR/lib/progress.sh"
if progress_run "bringing the local cluster up" "~10 min (node tools, images)" "~45 s" \
    "$MESHSCALER_E2E_STATE.up.log" "$LOCAL" up; then
  pass "e2e/local up ($((SECONDS - t0)) s)"
  grep -F 'cleaning up after the node of' "$MESHSCALER_E2E_STATE.up.log" | sed 's/^/     /' || true
  cp "$MESHSCALER_E2E_STATE/node/sysctl.saved" "$SYSCTLS_SAVED" 2>/dev/null || true
else
  # The cause is the `error:` line, after the failing component's log tail (up to 40
  # lines); what follows it is the clean-up.
  fail "e2e/local up" "$(grep -m1 -B24 '\[e2e\] error:' "$MESHSCALER_E2E_STATE.up.log" \
    || tail -n 5 "$MESHSCALER_E2E_STATE.up.log")"
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

check "manifests/10-crd.yaml exists" test -f "$REPO/manifests/10-crd.yaml"
if [ -f "$REPO/manifests/10-crd.yaml" ]; then
  check "apply manifests/10-crd.yaml" "${K[@]}" apply -f "$REPO/manifests/10-crd.yaml"
  check "the CRD is established" "${K[@]}" wait --for=condition=Established --timeout=30s \
    crd/meshautoscalers.autoscaling.meshscaler.io
  check "restricted identity can list meshautoscalers" "${R[@]}" get meshautoscalers -A
  check "restricted identity can patch meshautoscalers/status" "${R[@]}" auth can-i patch \
    meshautoscalers.autoscaling.meshscaler.io --subresource=status -n "$NS"
  # An object shaped like the example of docs/decision-rules.md must be accepted
  # by the CRD's schema.
  check "a MeshAutoscaler like the decision rules' example is accepted" "${K[@]}" apply -f - <<'EOF'
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
# Its pods name a scheduler that does not exist, so they stay Pending: this part checks
# the controller manager, the scale subresource and RBAC alone (pods that run: below).
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
      schedulerName: meshscaler-e2e-unscheduled
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

# --- the restricted identity (manifests/20-rbac.yaml) ---------------------------------------
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

# --- the node: pods that run ------------------------------------------------------------
node_ready() { [ "$("${K[@]}" get node "$MESHSCALER_E2E_NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ]; }
check "node $MESHSCALER_E2E_NODE is Ready" node_ready
check "kube-system/metrics-server is available" "${K[@]}" -n kube-system wait --for=condition=Available --timeout=60s deployment/metrics-server
check "the kubernetes Service's endpoints are the API server on the bridge" \
  grep -q "^$MESHSCALER_E2E_NODE_IP:" <<<"$("${K[@]}" get endpointslices -n default -l kubernetes.io/service-name=kubernetes \
    -o 'jsonpath={.items[0].endpoints[0].addresses[0]}:{.items[0].ports[0].port}')"

W=app
check "apply the app+sidecar Deployment and Service ($MESHSCALER_E2E_APP_IMAGE)" \
  bash -c "'$E2E_DIR/workloads/render' '$E2E_DIR/workloads/web.yaml' $W REPLICAS=2 | '$KUBECTL' --kubeconfig '$KUBECONFIG' -n $NS apply -f -"
ready_is() { [ "$("${K[@]}" -n "$NS" get deploy "$1" -o 'jsonpath={.status.readyReplicas}')" = "$2" ]; }
t0=$SECONDS
check "2 pods become Ready through their readiness probes" eventually 60 ready_is $W 2
t2=$((SECONDS - t0))
t0=$SECONDS
check "PATCH the scale subresource 2 -> 8" "${K[@]}" -n "$NS" patch deployment $W \
  --subresource=scale --type=merge -p '{"spec":{"replicas":8}}'
check "all 8 pods become Ready" eventually 90 ready_is $W 8
echo "     (2 Ready after ${t2} s; 2 -> 8 Ready after $((SECONDS - t0)) s)"
probes_real() { # every pod's sidecar reports the probe-driven Ready condition
  [ "$("${K[@]}" -n "$NS" get pods -l app=$W -o 'jsonpath={range .items[*]}{.status.containerStatuses[?(@.name=="sidecar")].ready}{" "}{end}')" = "true true true true true true true true " ]
}
check "the kubelet set every sidecar ready (no status faked)" probes_real

svc_ip="$("${K[@]}" -n "$NS" get service $W -o 'jsonpath={.spec.clusterIP}')"
# reached N: N requests to the ClusterIP through kube-proxy's rules; how many pods answered.
reached() {
  local i; for i in $(seq 1 "$1"); do curl -sf --max-time 2 "http://$svc_ip/work?ms=1" || echo FAILED; done \
    | sort | uniq -c | awk '{print $2 == "done" ? "ok" : "bad"}' | sort | uniq -c | tr -s ' '
}
answers="$(reached 80)"
check "the Service ($svc_ip) answers through the sidecars" grep -qE '^ ?[0-9]+ ok$' <<<"$answers"
pods_hit() { curl_n=$(for i in $(seq 1 80); do curl -sf --max-time 2 "http://$svc_ip/work?ms=1"; done | sort -u | wc -l); [ "$curl_n" -ge 4 ]; }
check "the Service spreads requests over the pods (80 requests reach >= 4 of 8)" pods_hit

pod="$("${K[@]}" -n "$NS" get pods -l app=$W -o 'jsonpath={.items[0].metadata.name}')"
whoami_in_pod() {
  "${K[@]}" -n "$NS" exec "$pod" -c sidecar -- sh -c '
    sa=/var/run/secrets/kubernetes.io/serviceaccount
    curl -sf --max-time 5 --cacert $sa/ca.crt -H "Authorization: Bearer $(cat $sa/token)" \
      -H "Content-Type: application/json" -X POST \
      -d "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}" \
      https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/apis/authentication.k8s.io/v1/selfsubjectreviews'
}
who="$(whoami_in_pod 2>&1 || true)"
check "a pod calls the API server through the kubernetes Service with its token" \
  grep -qE "\"username\": *\"system:serviceaccount:$NS:default\"" <<<"$who"
check "kubectl logs reaches the kubelet" grep -q "listening on :8080" <<<"$("${K[@]}" -n "$NS" logs "$pod" -c app 2>&1)"

top_all() { [ "$("${K[@]}" -n "$NS" top pods -l app=$W --no-headers 2>/dev/null | wc -l)" -eq 8 ]; }
t0=$SECONDS
check "kubectl top pods reports all 8 pods (metrics-server)" eventually 90 top_all
echo "     (after $((SECONDS - t0)) s)"

# A CPU-based HPA, the autoscaler of the incident, acting through kube-controller-manager.
H=busy
check "apply a 1-replica Deployment for the HPA" \
  bash -c "'$E2E_DIR/workloads/render' '$E2E_DIR/workloads/web.yaml' $H REPLICAS=1 CPU_MS=20 | '$KUBECTL' --kubeconfig '$KUBECONFIG' -n $NS apply -f -"
check "apply an autoscaling/v2 HPA on CPU (50% of requests, 1..4)" "${K[@]}" -n "$NS" apply -f - <<EOF
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: $H}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: $H}
  minReplicas: 1
  maxReplicas: 4
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
EOF
check "the HPA's Deployment is Ready" eventually 60 ready_is $H 1
hpa_cpu() { [ -n "$("${K[@]}" -n "$NS" get hpa $H -o 'jsonpath={.status.currentMetrics[0].resource.current.averageUtilization}')" ]; }
t0=$SECONDS
check "the HPA shows current CPU in its status" eventually 90 hpa_cpu
echo "     (after $((SECONDS - t0)) s: $("${K[@]}" -n "$NS" get hpa $H --no-headers 2>&1 | tr -s ' '))"
busy_ip="$("${K[@]}" -n "$NS" get service $H -o 'jsonpath={.spec.clusterIP}')"
# Load: 8 requests in flight, each 20 ms of CPU, through the Service, for at most 3 minutes.
timeout 180 curl -s --parallel --parallel-max 8 "http://$busy_ip/work?n=[1-1000000]" >/dev/null 2>&1 &
load_pid=$!
scaled_up() { [ "$("${K[@]}" -n "$NS" get deploy $H -o 'jsonpath={.spec.replicas}')" -gt 1 ]; }
t0=$SECONDS
check "under load the HPA scales the Deployment up" eventually 150 scaled_up
echo "     (after $((SECONDS - t0)) s: $("${K[@]}" -n "$NS" get hpa $H --no-headers 2>&1 | tr -s ' '))"
kill "$load_pid" 2>/dev/null || true
wait "$load_pid" 2>/dev/null || true

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

# What the node did to the host is undone (NODE.md "Side effects to undo").
check "no process names the state dir (shims, pods)" test -z "$(pgrep -af -- "$MESHSCALER_E2E_STATE" | grep -v pgrep || true)"
check "no mount under the state dir or the kubelet's fixed paths" \
  test -z "$(awk '{print $5}' /proc/self/mountinfo | grep -E "^($MESHSCALER_E2E_STATE|/var/lib/kubelet|/run/containerd)(/|$)" || true)"
check "no pod cgroups left" test -z "$(ls -d /sys/fs/cgroup/*/meshscaler-e2e 2>/dev/null || true)"
check "the bridge and its veths are gone" test -z "$(ip -o link show 2>/dev/null | grep -E 'mse2e0|master mse2e0' || true)"
check "no KUBE-* or meshscaler-e2e iptables rules (IPv4, IPv6)" \
  test -z "$( { iptables-save; ip6tables-save; } 2>/dev/null | grep -E 'KUBE-|meshscaler-e2e' || true)"
if [ -s "$SYSCTLS_SAVED" ]; then
  differ="$(sysctls_differ "$SYSCTLS_SAVED")"
  check "sysctls restored to what up found ($(awk '{printf "%s=%s ", $1, $2}' "$SYSCTLS_SAVED"))" test -z "$differ"
  [ -z "$differ" ] || echo "    now: $differ"
  [ "$(sysctl_values)" = "$SYSCTLS_BEFORE" ] || echo "    (at the start: $SYSCTLS_BEFORE; now: $(sysctl_values))"
else
  fail "sysctls restored" "up left no node/sysctl.saved"
fi
check "the node lock is released" test ! -e /run/meshscaler-e2e-node.state

echo "$passed passed, $failed failed"
