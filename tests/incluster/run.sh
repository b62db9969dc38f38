#!/usr/bin/env bash
# tests/incluster/run.sh - meshscaler installed with its Helm chart, running as pods
# next to a real workload, on whatever cluster KUBECONFIG names: the local cluster
# (tests/integration/incluster/run.sh sets it up) or a kind cluster (e2e/kind/up.sh).
#
# It installs the chart with its defaults (only the image, prometheus.url and a short
# sync period set), checks they are secure (user queries namespaced; /metrics over
# HTTPS: 401 without a token, 403 without the reader role, 200 for the reader over TLS
# verified with the chart's CA for the Service's name, as the ServiceMonitor would),
# waits for the controller pods (one leader), scales an app+sidecar Deployment whose
# sidecars Prometheus scrapes through the chart's RBAC alone, runs `helm test`,
# upgrades with changed values (plain /metrics, scraped by annotation) while watching
# the Lease, checks decisions go on after the upgrade, and uninstalls: nothing of the
# release may stay but the CRD.
#
# Needs:
#   KUBECONFIG                     an administrator of the cluster
#   MESHSCALER_IMAGE               the controller image (REPOSITORY:TAG), present on the nodes
#   MESHSCALER_E2E_APP_IMAGE       e2e/images/app, present on the nodes
#   MESHSCALER_E2E_SIDECAR_IMAGE   e2e/images/sidecar, present on the nodes
#   PROMETHEUS_CLUSTER_URL         Prometheus as pods reach it; it must scrape pods annotated
#                                  prometheus.io/scrape|port|path with namespace and pod labels
#   PROMETHEUS_URL                 optional: Prometheus as this script reaches it; then the
#                                  dashboard's queries are evaluated against it
#   KUBECTL, HELM                  optional (default: e2e/.bin's, else on PATH)
# Output: one line per check, then `N passed, N failed`; exit 1 on a failure.
set -uo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
KUBECTL="${KUBECTL:-$( [ -x "$REPO/e2e/.bin/kubectl" ] && echo "$REPO/e2e/.bin/kubectl" || command -v kubectl)}"
HELM="${HELM:-$( [ -x "$REPO/e2e/.bin/helm" ] && echo "$REPO/e2e/.bin/helm" || command -v helm)}"
for v in KUBECONFIG MESHSCALER_IMAGE MESHSCALER_E2E_APP_IMAGE MESHSCALER_E2E_SIDECAR_IMAGE PROMETHEUS_CLUSTER_URL; do
  [ -n "${!v:-}" ] || { echo "tests/incluster: $v is not set" >&2; exit 2; }
done
[ -x "$KUBECTL" ] && [ -x "$HELM" ] || { echo "tests/incluster: kubectl ($KUBECTL) or helm ($HELM) missing" >&2; exit 2; }

REL=mse2e
NS=mse2e-system
APPNS=mse2e-app
FULL="$REL-meshscaler"
SA="system:serviceaccount:$NS:$FULL"
WORK="$(mktemp -d /tmp/meshscaler-incluster.XXXXXX)"

# pass, fail, check, eventually
# shellcheck source-path=SCRIPTDIR source=../lib/check.sh
. "$REPO/tests/lib/check.sh"
note() { echo "     $*"; }
k() { "$KUBECTL" "$@"; }
jget() { k get -n "$1" "$2" "$3" -o "jsonpath=$4" 2>/dev/null; }

cleanup() {
  [ -n "${LEASE_WATCH_PID:-}" ] && kill "$LEASE_WATCH_PID" 2>/dev/null
  k delete clusterrolebinding "$REL-scraper" --ignore-not-found >/dev/null 2>&1 || true
  "$HELM" uninstall "$REL" -n "$NS" --wait --timeout 60s >/dev/null 2>&1 || true
  k delete namespace "$APPNS" "$NS" --ignore-not-found --wait=false >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap 'cleanup; echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]' EXIT

# A run that was interrupted may have left its release and namespaces.
"$HELM" uninstall "$REL" -n "$NS" --wait --timeout 60s >/dev/null 2>&1 || true
for ns in "$APPNS" "$NS"; do
  k delete namespace "$ns" --ignore-not-found --timeout=120s >/dev/null 2>&1 || true
done

# --- install ----------------------------------------------------------------------------
repo="${MESHSCALER_IMAGE%:*}" tag="${MESHSCALER_IMAGE##*:}"
# The chart's defaults but for the image, Prometheus and a short sync period: secure.
VALUES=(--set "image.repository=$repo" --set "image.tag=$tag"
  --set "prometheus.url=$PROMETHEUS_CLUSTER_URL" --set controller.syncPeriod=2s)
# From the upgrade on: plain /metrics, and the usual scrape annotations, so the
# cluster's Prometheus (which scrapes pods by annotation, over HTTP without a token)
# collects the controller's own series (the dashboard's data).
PLAIN=(--set metrics.secure=false
  --set-string 'podAnnotations.prometheus\.io/scrape=true' --set-string 'podAnnotations.prometheus\.io/port=8080'
  --set-string 'podAnnotations.prometheus\.io/path=/metrics')
METRICS=secure
t0=$SECONDS
check "helm install $REL (image $MESHSCALER_IMAGE)" "$HELM" install "$REL" "$REPO/charts/meshscaler" \
  -n "$NS" --create-namespace "${VALUES[@]}" --wait --timeout 180s
T_INSTALL=$((SECONDS - t0))
ready2() { [ "$(jget "$NS" deployment "$FULL" '{.status.readyReplicas}')" = 2 ]; }
check "both controller pods are Ready" eventually 60 ready2
note "(install to Ready: ${T_INSTALL} s)"

# pods: the controller's pods that are not terminating.
pods() { k get pods -n "$NS" -l "app.kubernetes.io/instance=$REL,app.kubernetes.io/component=controller" \
  -o 'jsonpath={range .items[*]}{.metadata.name}{" "}{.metadata.deletionTimestamp}{"\n"}{end}' | awk 'NF == 1 {print $1}'; }

# --- secure defaults: user queries, /metrics behind TLS and the two reviews ----------------
args="$(jget "$NS" deployment "$FULL" '{.spec.template.spec.containers[0].args}')"
check "default: user queries namespaced (--user-queries=namespaced)" grep -q -- '--user-queries=namespaced' <<<"$args"
check "default: secure /metrics (--metrics-secure=true, --metrics-cert-dir)" \
  bash -c "grep -q -- '--metrics-secure=true' <<<'$args' && grep -q -- '--metrics-cert-dir=' <<<'$args'"
# A scraper as Prometheus would be: a pod whose ServiceAccount is bound to the chart's
# metrics-reader role, holding the CA of the chart's Secret. It scrapes each pod's
# address under the Service's name (curl --resolve), as a ServiceMonitor with the
# chart's tlsConfig (ca, serverName) does.
SVCNAME="$FULL.$NS.svc"
check "a scraper pod (ServiceAccount bound to $FULL-metrics-reader, the chart's CA)" k apply -n "$NS" -f - <<EOF
apiVersion: v1
kind: ServiceAccount
metadata: {name: scraper}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: stranger}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: $REL-scraper}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: $FULL-metrics-reader}
subjects: [{kind: ServiceAccount, name: scraper, namespace: $NS}]
---
apiVersion: v1
kind: Pod
metadata: {name: scraper}
spec:
  serviceAccountName: scraper
  terminationGracePeriodSeconds: 1
  containers:
  - name: scraper
    image: $MESHSCALER_E2E_SIDECAR_IMAGE
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "while :; do sleep 3600; done"]
    volumeMounts: [{name: ca, mountPath: /ca, readOnly: true}]
  volumes:
  - name: ca
    secret: {secretName: $FULL-metrics-tls, items: [{key: ca.crt, path: ca.crt}]}
EOF
scraper_ready() { [ "$(jget "$NS" pod scraper '{.status.containerStatuses[0].ready}')" = true ]; }
check "the scraper pod is Ready" eventually 60 scraper_ready
pod_ip() { jget "$NS" pod "$1" '{.status.podIP}'; }
# scrape IP NAME [TOKEN|-] : curl's "HTTP_CODE EXIT" for /metrics at IP as https://NAME:8080,
# verified with the chart's CA; TOKEN "-" sends the scraper's own ServiceAccount token,
# "" none. The body goes to /tmp/metrics in the pod.
scrape() {
  # shellcheck disable=SC2016 # expanded by the pod's shell
  k exec -n "$NS" scraper -- sh -c '
    if [ "$3" = - ]; then tok="$(cat /var/run/secrets/kubernetes.io/serviceaccount/token)"; else tok="$3"; fi
    if [ -n "$tok" ]; then set -- "$1" "$2" -H "Authorization: Bearer $tok"; else set -- "$1" "$2"; fi
    ip="$1" name="$2"; shift 2
    code="$(curl -s -o /tmp/metrics -w "%{http_code}" --max-time 5 --cacert /ca/ca.crt \
      --resolve "$name:8080:$ip" "$@" "https://$name:8080/metrics")"
    echo "$code $?"' sh "$1" "$2" "${3:-}" 2>/dev/null
}
first_pod="$(pods | head -n 1)"
ip="$(pod_ip "$first_pod")"
got="$(scrape "$ip" "$SVCNAME")"
check "an unauthenticated scrape is refused: 401 (got: $got)" test "$got" = "401 0"
got="$(scrape "$ip" "$SVCNAME" "$(k create token stranger -n "$NS" 2>/dev/null)")"
check "a token without the reader role is refused: 403 (got: $got)" test "$got" = "403 0"
got="$(scrape "$ip" "$SVCNAME" -)"
check "the reader's scrape is served over TLS verified for $SVCNAME: 200 (got: $got)" test "$got" = "200 0"
check "its body is the controller's metrics (meshscaler_leader)" k exec -n "$NS" scraper -- grep -q '^meshscaler_leader ' /tmp/metrics
got="$(scrape "$ip" "other.$NS.svc" -)"
check "the verification is real: the same certificate under another name fails (curl exit 60; got: $got)" test "${got#* }" = 60
# The ServiceMonitor of these values verifies with what the scrape above used.
sm_tls="$("$HELM" template "$REL" "$REPO/charts/meshscaler" -n "$NS" "${VALUES[@]}" --set serviceMonitor.enabled=true \
  --show-only templates/servicemonitor.yaml 2>&1 | python3 -c 'import sys, yaml, json
ep = yaml.safe_load(sys.stdin)["spec"]["endpoints"][0]; print(json.dumps([ep.get("scheme"), ep.get("tlsConfig")], sort_keys=True))')"
want_tls="$(python3 -c 'import json, sys; print(json.dumps(["https", {"ca": {"secret": {"key": "ca.crt", "name": sys.argv[1]}}, "serverName": sys.argv[2]}], sort_keys=True))' "$FULL-metrics-tls" "$SVCNAME")"
check "the ServiceMonitor of these values verifies the same way (https, ca.crt of $FULL-metrics-tls, serverName $SVCNAME)" test "$sm_tls" = "$want_tls"

# metrics_of POD: its /metrics: through the scraper while /metrics is secure, else
# through the API server's pod proxy.
metrics_of() {
  if [ "$METRICS" = secure ]; then
    [ "$(scrape "$(pod_ip "$1")" "$SVCNAME" -)" = "200 0" ] && k exec -n "$NS" scraper -- cat /tmp/metrics 2>/dev/null
  else
    k get --raw "/api/v1/namespaces/$NS/pods/$1:8080/proxy/metrics" 2>/dev/null
  fi
}
# leader_of POD: its meshscaler_leader gauge.
leader_of() { metrics_of "$1" | awk '$1 == "meshscaler_leader" {print $2}'; }
one_leader() {
  local p n=0 seen=0
  for p in $(pods); do
    seen=$((seen + 1))
    [ "$(leader_of "$p")" = 1 ] && n=$((n + 1))
  done
  [ "$seen" -eq 2 ] && [ "$n" -eq 1 ]
}
check "exactly one of the two pods leads (meshscaler_leader)" eventually 60 one_leader
holder() { jget "$NS" lease meshscaler '{.spec.holderIdentity}'; }
check "the chart's Lease names the leader" test -n "$(holder)"
note "(holder: $(holder))"

# --- the RBAC the controller runs with: the chart's alone --------------------------------
can() { k auth can-i "$@" --as="$SA" >/dev/null 2>&1; }
check "its ServiceAccount may patch deployments/scale" can patch deployments.apps --subresource=scale -n default
check "it may not patch a Deployment itself" bash -c "! '$KUBECTL' auth can-i patch deployments.apps -n default --as='$SA' >/dev/null 2>&1"
check "it may not read Secrets" bash -c "! '$KUBECTL' auth can-i list secrets -A --as='$SA' >/dev/null 2>&1"
check "it may not touch leases outside its namespace" bash -c "! '$KUBECTL' auth can-i update leases -n kube-system --as='$SA' >/dev/null 2>&1"
check "it may update its own Lease" can update leases.coordination.k8s.io/meshscaler -n "$NS"
check "it may not update another Lease in its namespace" bash -c "! '$KUBECTL' auth can-i update leases.coordination.k8s.io/other -n '$NS' --as='$SA' >/dev/null 2>&1"
k auth can-i --list -n "$APPNS" --as="$SA" > "$WORK/rbac.txt" 2>/dev/null || true

# --- a workload, scaled by the pods ------------------------------------------------------
check "create namespace $APPNS" k create namespace "$APPNS"
# Ten requests in flight per sidecar is its limit: concurrency, not CPU, binds.
check "apply the app+sidecar workload (2 replicas, sidecar maxconn 10)" bash -c \
  "'$REPO/e2e/workloads/render' '$REPO/e2e/workloads/web.yaml' app REPLICAS=2 WORKERS=64 SIDECAR_MAXCONN=10 | '$KUBECTL' -n $APPNS apply -f -"
app_ready() { [ "$(jget "$APPNS" deployment app '{.status.readyReplicas}')" = "$1" ]; }
check "the workload is Ready" eventually 60 app_ready 2
check "apply a MeshAutoscaler on sidecar concurrency (30% of maxconn)" k apply -n "$APPNS" -f - <<'EOF'
apiVersion: autoscaling.meshscaler.io/v1alpha1
kind: MeshAutoscaler
metadata: {name: app}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: app}
  minReplicas: 2
  maxReplicas: 8
  metrics:
  - name: sidecar
    type: SidecarConcurrency
    sidecarConcurrency: {proxy: haproxy}
    target: {type: Utilization, averageUtilization: 30}
  guardrails:
    downstream:
    # The sidecars' own frontends, as a stand-in for a balancer: a generous limit that
    # never binds here, so the guardrail series are there to see.
    - name: frontends
      usageQuery: 'sum(haproxy_frontend_current_sessions{namespace="{{namespace}}",proxy="inbound"})'
      limit: 10000
      perReplica: 10
EOF
metric_seen() { [ -n "$(jget "$APPNS" mas app '{.status.currentMetrics[0].value}')" ]; }
check "the controller reads the sidecars through Prometheus (status.currentMetrics)" eventually 60 metric_seen
note "(status: $(jget "$APPNS" mas app '{.status.lastDecision.reason}'): $(jget "$APPNS" mas app '{.status.lastDecision.message}' | cut -c1-150))"

# load CONCURRENCY: a Deployment of one pod holding CONCURRENCY requests in flight
# (each /sleep holds half a second), through the Service, from inside the cluster.
load() {
  k apply -n "$APPNS" -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: load}
spec:
  replicas: 1
  selector: {matchLabels: {app: load}}
  template:
    metadata: {labels: {app: load}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: load
        image: $MESHSCALER_E2E_SIDECAR_IMAGE
        imagePullPolicy: IfNotPresent
        command: ["sh", "-c", "while :; do curl -s --parallel --parallel-max $1 -o /dev/null 'http://'\$APP_SERVICE_HOST'/sleep?ms=500&n=[1-2000]'; done"]
EOF
}
replicas_at_least() { [ "$(jget "$APPNS" deployment app '{.spec.replicas}')" -ge "$1" ] 2>/dev/null; }
check "start 12 requests in flight (6 per pod: 60% of maxconn)" load 12
t0=$SECONDS
check "the controller scales the workload up (2 -> >= 4)" eventually 90 replicas_at_least 4
note "(after $((SECONDS - t0)) s: replicas $(jget "$APPNS" deployment app '{.spec.replicas}'), $(jget "$APPNS" mas app '{.status.lastDecision.reason}'))"
rescaled() { k get events -n "$APPNS" --field-selector involvedObject.kind=MeshAutoscaler,reason=SuccessfulRescale -o name | grep -q .; }
check "a SuccessfulRescale event is recorded" eventually 20 rescaled
check "the new pods become Ready" eventually 60 app_ready "$(jget "$APPNS" deployment app '{.spec.replicas}')"

# --- the series of the dashboard and the alerts ------------------------------------------
leader_pod() { local p; for p in $(pods); do [ "$(leader_of "$p")" = 1 ] && { echo "$p"; return 0; }; done; return 1; }
metrics_of "$(leader_pod)" > "$WORK/metrics.txt"
missing=""
while read -r series; do
  [ -n "$series" ] && ! grep -q "^# TYPE $series " "$WORK/metrics.txt" && missing+="$series "
done < "$REPO/charts/meshscaler/series.txt"
check "every series of the dashboard and alerts (series.txt) is in the leader's /metrics" test -z "$missing"
[ -z "$missing" ] || note "missing: $missing"
absent=""
for series in meshscaler_metric_value meshscaler_metric_target meshscaler_metric_desired_replicas \
  meshscaler_downstream_headroom meshscaler_downstream_allowed_replicas meshscaler_condition \
  meshscaler_last_decision_reason meshscaler_desired_replicas meshscaler_current_replicas; do
  grep -q "^$series{namespace=\"$APPNS\",name=\"app\"" "$WORK/metrics.txt" || absent+="$series "
done
check "the per-object series carry the MeshAutoscaler's values" test -z "$absent"
[ -z "$absent" ] || note "no sample for: $absent"
note "($(grep -E "^meshscaler_(metric_value|metric_target|last_decision_reason|downstream_headroom)\{namespace=\"$APPNS\"" "$WORK/metrics.txt" | tr '\n' ' ' | cut -c1-300))"

# --- helm test ---------------------------------------------------------------------------
check "helm test (the test pod probes /readyz through the Service)" "$HELM" test "$REL" -n "$NS" --timeout 90s

# --- helm upgrade with changed values: the lease and the decisions go on -------------------
before="$(pods | sort | tr '\n' ' ')"
# One line per 0.2 s: time, holder, renewTime (the watcher keeps going until killed).
( while :; do printf '%s %s\n' "$(date +%s.%N)" "$(jget "$NS" lease meshscaler '{.spec.holderIdentity}|{.spec.renewTime}')"; sleep 0.2; done ) > "$WORK/lease.log" 2>/dev/null &
LEASE_WATCH_PID=$!
t0=$SECONDS
check "helm upgrade --set controller.logLevel=debug, plain /metrics, rolls the controller" "$HELM" upgrade "$REL" "$REPO/charts/meshscaler" \
  -n "$NS" "${VALUES[@]}" "${PLAIN[@]}" --set controller.logLevel=debug --wait --timeout 180s
METRICS=plain
rolled() { local now; now="$(pods | sort | tr '\n' ' ')"; [ -n "$now" ] && [ "$(comm -12 <(tr ' ' '\n' <<<"$before" | sort) <(tr ' ' '\n' <<<"$now" | sort) | grep -c .)" -eq 0 ] && ready2; }
check "both pods were replaced and are Ready" eventually 120 rolled
check "one leader after the upgrade" eventually 60 one_leader
sleep 3
kill "$LEASE_WATCH_PID" 2>/dev/null; wait "$LEASE_WATCH_PID" 2>/dev/null; LEASE_WATCH_PID=
# The longest stretch with no holder named in the Lease, in seconds.
gap="$(awk '{split($2, a, "|"); if (a[1] == "") { if (!s) s = $1 } else if (s) { g = $1 - s; if (g > m) m = g; s = 0 } } END { if (s) { g = $1 - s; if (g > m) m = g } printf "%.1f", m }' "$WORK/lease.log")"
holders="$(awk '{split($2, a, "|"); if (a[1] != "" && a[1] != last) { n++; last = a[1] } } END {print n}' "$WORK/lease.log")"
note "(upgrade took $((SECONDS - t0)) s; leaders seen: $holders; longest time with no holder: ${gap} s)"
check "the Lease never went without a holder for as long as its duration (15 s)" awk -v g="$gap" 'BEGIN { exit !(g < 15) }'
check "start 24 requests in flight (decisions after the upgrade)" load 24
t0=$SECONDS
check "the new leader scales further up (-> 8)" eventually 90 replicas_at_least 8
note "(after $((SECONDS - t0)) s: $(jget "$APPNS" mas app '{.status.lastDecision.reason}'))"

# --- what the dashboard shows ---------------------------------------------------------------
if [ -n "${PROMETHEUS_URL:-}" ]; then
  scraped() { curl -sf "$PROMETHEUS_URL/api/v1/query" --data-urlencode 'query=meshscaler_objects' | grep -q '"value"'; }
  check "Prometheus scrapes the controller pods (annotations)" eventually 30 scraped
  job="$(curl -sf "$PROMETHEUS_URL/api/v1/query" --data-urlencode 'query=meshscaler_objects' | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["metric"].get("job","") if r else "")')"
  python3 "$REPO/tests/chart/dashboard_queries.py" "$PROMETHEUS_URL" "$job" > "$WORK/dashboard.txt" 2>&1
  empty="$(awk -F'\t' '$2 == 0 {print $1}' "$WORK/dashboard.txt" | sort -u | tr '\n' ',')"
  # Panels of errors and of limits may rightly be empty; every other one must show data.
  check "every dashboard panel but those of errors and limits shows data (job=$job)" \
    test -z "$(awk -F'\t' '$2 == 0 && $1 !~ /[Ee]rror|[Ff]ailure|Limiting/ {print $1}' "$WORK/dashboard.txt")"
  note "(empty panels: ${empty:-none})"
  sed 's/^/       /; s/\t/ | /g' "$WORK/dashboard.txt"
else
  note "PROMETHEUS_URL not set: the dashboard's queries were not evaluated"
fi

# --- uninstall ---------------------------------------------------------------------------
k delete deployment load -n "$APPNS" --wait=false >/dev/null 2>&1
check "helm uninstall" "$HELM" uninstall "$REL" -n "$NS" --wait --timeout 120s
left() {
  { k get all,serviceaccounts,roles,rolebindings,poddisruptionbudgets,leases,configmaps,networkpolicies \
      -n "$NS" -l "app.kubernetes.io/instance=$REL" -o name 2>/dev/null
    k get leases -n "$NS" -o name 2>/dev/null
    k get clusterroles,clusterrolebindings -l "app.kubernetes.io/instance=$REL" -o name 2>/dev/null; } | sort -u
}
gone() { [ -z "$(left)" ]; }
check "nothing of the release is left (and no Lease)" eventually 60 gone
[ -z "$(left)" ] || note "left: $(left | tr '\n' ' ')"
check "the CRD stays (Helm never deletes crds/)" k get crd meshautoscalers.autoscaling.meshscaler.io

echo "     the controller's permissions in $APPNS (kubectl auth can-i --list):"
grep -vE '^(selfsubject|\s*$)' "$WORK/rbac.txt" | sed 's/^/       /' | head -n 30
# The verdict is the script's last status: an EXIT trap does not set it, and the
# `| head` above may end with SIGPIPE under pipefail.
[ "$failed" -eq 0 ]
