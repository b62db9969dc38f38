#!/usr/bin/env bash
# bench/controller.sh - the controller at scale on the local control plane
# (e2e/local up --no-node): N MeshAutoscalers on N Deployments, one
# SidecarConcurrency/haproxy metric each, their sidecars' series generated
# and scraped by the real Prometheus; the controller (a Release build) runs
# dry-run and then live, and every 15 s the figures are printed. Nothing is
# asserted: docs/performance.md keeps the figures.
#
#   bench/controller.sh [N (1000)] [WINDOWS (4)] [MODES ("dry-run live")]
#
# MODES: dry-run and live run meshscaler; hpa runs the peer people use today on the
# same Deployments: N autoscaling/v2 HPAs with an External metric served by
# prometheus-adapter (e2e/local adapter: built from its Go module, a process on the
# host registered through the aggregation layer) and kube-controller-manager's HPA
# controller at the same 15 s sync period. Both compute the same thing: the sidecars'
# sessions summed per Deployment against 50 per replica (AverageValue: desired =
# ceil(sum / 50)). In live and hpa, BENCH_LATENCY (default 3) samples of
# metric-change-to-scale latency follow the windows: one Deployment's sessions go
# from 50 to 80 in the exporter's file, and the time until its spec.replicas leaves 1
# is measured with a watch (at most BENCH_LATENCY_TIMEOUT s, default 120).
# BENCH_KCM_ARGS: kube-controller-manager's extra flags (below);
# BENCH_HPA_FIRST_PASS (default 300) bounds the wait for the HPAs' first pass. hpa
# deletes its HPAs (and waits until they are gone) when it ends, so a mode after it
# ("hpa live": alternate which system goes first) has the Deployments to itself.
# Per hpa window: HPA syncs (its GETs of deployments/scale), status writes, external
# metric requests (the adapter's own count: the API server does not count what its
# front proxy forwards), adapter CPU and RSS, Prometheus queries, every client's API
# requests and the control plane's CPU (kube-controller-manager's HPA controller is
# its part above the background).
#
# Per 15 s window (the controller's /metrics read once at each end, as a
# Prometheus scraping every 15 s would): decisions; syncs later than their period (objects that
# missed it); rounds and their wall time; controller CPU seconds and RSS; API
# requests by verb and resource (the API server's own apiserver_request_total,
# minus the background measured before the controller starts: the controller
# manager, pod-sd and Prometheus); Prometheus queries and their time
# (Prometheus' own prometheus_engine_query_duration_seconds).
#
# The Deployments are paused (spec.paused: no ReplicaSet, no pod, so 10,000 of
# them stay cheap for the control plane), at 1 replica; every sidecar reports 50
# of 100 sessions against a target of 50 per replica, so at rest nothing should
# change: 0 writes. (No pod is ready, so a Utilization target could not scale up:
# both systems multiply it by the ready pods.)
#
# Client limits: kube-controller-manager runs at meshscaler's defaults, --kube-api-qps
# 300 and --kube-api-burst 600 (BENCH_KCM_ARGS; its own defaults are 20/30, and every
# controller in it has its own limiter), so the side by side compares the two systems'
# work, not their clients' limits. BENCH_KCM_ARGS="" gives kube-controller-manager its
# defaults; kube-scheduler (BENCH_PODS) gets the same 300/600.
#
# BENCH_PODS=1: the Deployments are not paused and their pods exist, Running and Ready:
# kube-scheduler (not part of `e2e/local up --no-node`) places them on fake nodes that
# kwok (sigs.k8s.io/kwok, `e2e/local tools kwok`) manages; kwok plays the kubelet
# (node heartbeats, pods Running/Ready with an IP), no container runs. Each pod's
# sidecar series carry its real name (listed once its pods are Ready; a pod created
# later reports nothing, as a sidecar not yet scraped). meshscaler's spec is then a
# Utilization target (50% of haproxy_server_limit_sessions) with a saturation entry
# (rejected: haproxy_backend_connection_errors_total, admitted:
# haproxy_server_sessions_total, growing 10/s, each by {{namespace}} and {{podRegex}}):
# its pod informer, ready counts and two user queries per object run. The HPA keeps
# its External AverageValue 50 (the same desired count at 1 pod each).
#
# Mode masschange (needs BENCH_PODS=1; alone in MODES, on a fresh environment; no
# saturation entry unless BENCH_SATURATION=1, as in issue 28's workload): before
# meshscaler starts, every even Deployment's pods report 80 of 100 sessions (Utilization
# 80% against 50: each asks one more replica), and meshscaler starts live on objects
# never decided; every 15 s from its start (WINDOWS periods) it prints decisions,
# Prometheus queries and their evaluation time, controller CPU and RSS, its scale,
# status and Event requests, scale writes landed and how long after the first round
# began the last of them landed, the longest from a decision to its write (the "scaled"
# log line's after_decision) among the writes of the period, Events dropped.
#
# Builds Release into $MS_BENCH_BUILD (default build-bench) from this tree; or
# BENCH_BINARY=PATH runs that meshscaler binary as it is (another branch's build).
# Its own state dir; brings it down at the end. `uptime`'s load is printed with every
# window: the machine is shared.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
N="${1:-1000}"
WINDOWS="${2:-4}"
MODES="${3:-dry-run live}"
build="${MS_BENCH_BUILD:-$root/build-bench}"
export MESHSCALER_E2E_STATE="${BENCH_STATE:-/tmp/meshscaler-bench-controller}"
LOCAL="$root/e2e/local"
work="$(mktemp -d "${TMPDIR:-/tmp}/meshscaler-bench-ctl.XXXXXX")"
LATENCY="${BENCH_LATENCY:-3}"
LATENCY_TIMEOUT="${BENCH_LATENCY_TIMEOUT:-120}"
# The HPA controller's sync period said out loud (15 s is also its default).
export MESHSCALER_E2E_KCM_ARGS="--horizontal-pod-autoscaler-sync-period=15s ${BENCH_KCM_ARGS---kube-api-qps=300 --kube-api-burst=600}"
PODS="${BENCH_PODS:-}"
# The saturation entry (BENCH_PODS): on, but off for masschange (issue 28's workload is
# the one SidecarConcurrency metric) unless BENCH_SATURATION=1; BENCH_SATURATION=0 drops it.
if [[ " $MODES " == *" masschange "* ]]; then SATURATION="${BENCH_SATURATION:-0}"; else SATURATION="${BENCH_SATURATION:-1}"; fi
PIDS=()

cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  if [ -n "${BENCH_KEEP:-}" ]; then
    say "BENCH_KEEP: the environment and the exporter stay up ($MESHSCALER_E2E_STATE)"
    return
  fi
  [ -z "${EXPORTER_PID:-}" ] || kill "$EXPORTER_PID" 2>/dev/null
  [ -z "${WATCH_PID:-}" ] || kill "$WATCH_PID" 2>/dev/null
  wait 2>/dev/null
  "$LOCAL" down >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { printf '%s\n' "$*"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

if [ -n "${BENCH_BINARY:-}" ]; then
  meshscaler_bin="$BENCH_BINARY"
  [ -x "$meshscaler_bin" ] || { say "BENCH_BINARY: $meshscaler_bin is not an executable"; exit 1; }
else
  meshscaler_bin="$build/meshscaler"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null &&
    ninja -C "$build" meshscaler >/dev/null || { say "build failed"; exit 1; }
fi
say "meshscaler: $meshscaler_bin ($("$meshscaler_bin" version 2>/dev/null | head -n 1); this tree at $(git -C "$root" rev-parse --short HEAD 2>/dev/null)); kube-controller-manager: $MESHSCALER_E2E_KCM_ARGS; load: $(uptime | sed 's/.*load/load/')"
[ -z "$PODS" ] || [ -x "$root/e2e/.bin/kwok" ] || "$LOCAL" tools kwok >&2 || { say "kwok could not be installed"; exit 1; }

# BENCH_REUSE=1: the environment, objects and exporter of an earlier BENCH_KEEP=1 run.
if [ -z "${BENCH_REUSE:-}" ]; then
"$LOCAL" down >/dev/null 2>&1
"$LOCAL" up --no-node >"$work/up.log" 2>&1 || { tail -n 20 "$work/up.log"; exit 1; }
fi
eval "$("$LOCAL" env)"
k() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }
k apply -f "$root/manifests/10-crd.yaml" >/dev/null
k wait --for=condition=Established --timeout=60s crd/meshautoscalers.autoscaling.meshscaler.io >/dev/null

# --- BENCH_PODS: kube-scheduler and kwok's fake nodes ----------------------------------------
# Both are started as e2e/local starts its components (a PID file in its state dir, so
# `e2e/local down` stops them) with the admin kubeconfig; the scheduler at the same
# client limits as the others. Nodes: enough for twice N pods at 2,000 pods each (a
# mass change doubles half of them), so no pod waits for room.
pods_env_up() {
  local st="$MESHSCALER_E2E_STATE" nodes i
  cat >"$st/scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: $KUBECONFIG, qps: 300, burst: 600}
leaderElection: {leaderElect: false}
EOF
  "$root/e2e/.bin/controlplane" kube-scheduler --config="$st/scheduler.yaml" --secure-port=0 --v=1 \
    >"$st/logs/kube-scheduler.log" 2>&1 </dev/null &
  echo $! >"$st/pids/kube-scheduler.pid"
  disown # stopped by `e2e/local down`, not waited for by cleanup's wait
  # kwok: only the nodes labelled for it; pods on them get an IP from its CIDR and turn
  # Running and Ready by kwok's default stages (e2e/kwok/stages.yaml; no container, no
  # kubelet).
  "$root/e2e/.bin/kwok" --kubeconfig="$KUBECONFIG" --config="$root/e2e/kwok/stages.yaml" --manage-all-nodes=false \
    --manage-nodes-with-label-selector=type=kwok --cidr=10.200.0.0/16 --node-ip=10.199.0.1 \
    >"$st/logs/kwok.log" 2>&1 </dev/null &
  echo $! >"$st/pids/kwok.pid"
  disown
  nodes=$(( (2 * N + 1999) / 2000 ))
  for i in $(seq 0 $((nodes - 1))); do
    cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-$i
  labels: {type: kwok, kubernetes.io/hostname: kwok-$i}
  annotations: {node.alpha.kubernetes.io/ttl: "0", kwok.x-k8s.io/node: fake}
status:
  allocatable: {cpu: "1000", memory: 4Ti, pods: "2000"}
  capacity: {cpu: "1000", memory: 4Ti, pods: "2000"}
EOF
  done >"$work/nodes.yaml"
  k apply -f "$work/nodes.yaml" >/dev/null || { say "creating kwok's nodes failed"; return 1; }
  for _ in $(seq 1 60); do
    [ "$(k get nodes --no-headers 2>/dev/null | grep -c ' Ready ')" -ge "$nodes" ] && break
    sleep 1
  done
  say "  $(k get nodes --no-headers 2>/dev/null | grep -c ' Ready ') of $nodes kwok nodes Ready (kube-scheduler and kwok $("$root/e2e/.bin/kwok" --version 2>/dev/null | head -n 1) started)"
}
# pods_list: "namespace pod app" of every Running pod, into $work/exp/pods (the
# sidecars' series follow it).
pods_list() {
  k get pods -A --field-selector=status.phase=Running --no-headers \
    -o custom-columns=NS:.metadata.namespace,NAME:.metadata.name,APP:.metadata.labels.app >"$work/exp/pods.tmp" &&
    mv "$work/exp/pods.tmp" "$work/exp/pods"
}
[ -z "$PODS" ] || [ -n "${BENCH_REUSE:-}" ] || pods_env_up || exit 1
if [ -n "$PODS" ]; then CP_EXTRA="kube-scheduler kwok"; else CP_EXTRA=""; fi

# --- the objects --------------------------------------------------------------------------
if [ -z "${BENCH_REUSE:-}" ]; then
nns=$(( (N + 99) / 100 ))
say "creating $N Deployments and MeshAutoscalers in $nns namespaces ..."
t0=$SECONDS
mkdir -p "$work/exp"
python3 - "$N" "$work" "$PODS" "$SATURATION" <<'PY'
import sys
n, work, pods, saturation = int(sys.argv[1]), sys.argv[2], sys.argv[3] != "", sys.argv[4] == "1"
nns = (n + 99) // 100
paused = "" if pods else "\n  paused: true"
if pods:
    # Utilization of the sidecars' own limit, and a saturation entry: the pod informer,
    # ready counts and two user queries per object.
    spec_metrics = """  metrics:
  - name: sidecar
    type: SidecarConcurrency
    sidecarConcurrency: {proxy: haproxy}
    target: {type: Utilization, averageUtilization: 50}
""" + ("""  guardrails:
    saturation:
    - metric: sidecar
      rejectedQuery: 'sum(rate(haproxy_backend_connection_errors_total{namespace="{{namespace}}",pod=~"{{podRegex}}",proxy="app"}[1m]))'
      admittedQuery: 'sum(rate(haproxy_server_sessions_total{namespace="{{namespace}}",pod=~"{{podRegex}}",proxy="app"}[1m]))'
""" if saturation else "")
else:
    spec_metrics = """  metrics:
  - name: sidecar
    type: SidecarConcurrency
    sidecarConcurrency: {proxy: haproxy}
    target: {type: AverageValue, averageValue: "50"}
"""
with open(f"{work}/ns.yaml", "w") as f:
    for j in range(nns):
        f.write(f"---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: bench-{j}}}\n")
chunk = 500
for start in range(0, n, chunk):
    with open(f"{work}/objects-{start // chunk:04d}.yaml", "w") as f:
        for i in range(start, min(n, start + chunk)):
            ns = f"bench-{i // 100}"
            f.write(f"""---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: w{i}, namespace: {ns}}}
spec:{paused}
  replicas: 1
  selector: {{matchLabels: {{app: w{i}}}}}
  template:
    metadata: {{labels: {{app: w{i}}}}}
    spec: {{containers: [{{name: app, image: registry.invalid/bench:1}}]}}
---
apiVersion: autoscaling.meshscaler.io/v1alpha1
kind: MeshAutoscaler
metadata: {{name: w{i}, namespace: {ns}}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: w{i}}}
  minReplicas: 1
  maxReplicas: 10
{spec_metrics}""")
PY
# The sidecars' series: sessions 50 of 100 each, or the value of $work/exp/overrides
# ("INDEX SESSIONS" lines); `app` is the pod label a Prometheus labelmap would copy,
# which prometheus-adapter's rule selects by (meshscaler derives the Deployment from
# the pod name). Rewritten whole and renamed, so a scrape never reads half a file.
# With BENCH_PODS, one sidecar per Running pod of $work/exp/pods, by its real name (the
# override of its Deployment's index), and the saturation entry's two counters.
cat >"$work/series.py" <<'PY'
import os, sys
n, d = int(sys.argv[1]), sys.argv[2]
over = {}
if os.path.exists(f"{d}/overrides"):
    for line in open(f"{d}/overrides"):
        i, v = line.split()
        over[int(i)] = v
if os.path.exists(f"{d}/pods"):
    pods = []
    for line in open(f"{d}/pods"):
        ns, pod, app = line.split()
        if app.startswith("w") and app[1:].isdigit():
            pods.append((int(app[1:]), ns, pod))
else:
    pods = [(i, f"bench-{i // 100}", f"w{i}-5d8f7c9b6-x2k4p") for i in range(n)]
def lab(p):
    i, ns, pod = p
    return f'namespace="{ns}",pod="{pod}",app="w{i}",proxy="app",server="app"'
out = ["# TYPE haproxy_server_current_sessions gauge"]
out += [f"haproxy_server_current_sessions{{{lab(p)}}} {over.get(p[0], 50)}" for p in pods]
out.append("# TYPE haproxy_server_limit_sessions gauge")
out += [f"haproxy_server_limit_sessions{{{lab(p)}}} 100" for p in pods]
if os.path.exists(f"{d}/pods"):
    out.append("# TYPE haproxy_server_sessions_total counter")
    out += [f"haproxy_server_sessions_total{{{lab(p)}}} {{{{counter:10}}}}" for p in pods]
    out.append("# TYPE haproxy_backend_connection_errors_total counter")
    out += [f"haproxy_backend_connection_errors_total{{{lab(p)}}} 0" for p in pods]
with open(f"{d}/.bench.prom.tmp", "w") as f:
    f.write("\n".join(out) + "\n")
os.rename(f"{d}/.bench.prom.tmp", f"{d}/bench.prom")
PY
python3 "$work/series.py" "$N" "$work/exp"
k apply -f "$work/ns.yaml" >/dev/null
# Two kubectl at a time: the API server has the other core.
ls "$work"/objects-*.yaml | xargs -P 2 -n 1 "$KUBECTL" --kubeconfig "$KUBECONFIG" create -f >/dev/null 2>"$work/create.err" ||
  { tail -n 5 "$work/create.err"; say "creating the objects failed"; exit 1; }
say "  created in $((SECONDS - t0)) s: $(k get deploy -A --no-headers | wc -l) Deployments, $(k get mas -A --no-headers | wc -l) MeshAutoscalers"
if [ -n "$PODS" ]; then
  # The ReplicaSet controller creates the pods, kube-scheduler binds them, kwok turns
  # them Running and Ready; the sidecars' series then carry their names.
  t0=$SECONDS running=0
  while [ $((SECONDS - t0)) -lt "${BENCH_PODS_WAIT:-1200}" ]; do
    running=$(k get pods -A --field-selector=status.phase=Running --no-headers -o name 2>/dev/null | wc -l)
    [ "$running" -ge "$N" ] && break
    sleep 10
  done
  pods_list
  python3 "$work/series.py" "$N" "$work/exp"
  say "  $running pods Running $((SECONDS - t0)) s later ($(k get pods -A --no-headers 2>/dev/null | awk '$4 != "Running"' | wc -l) not Running; Ready: $(k get pods -A -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' 2>/dev/null | grep -c True))"
fi

# --- the sidecars' series ----------------------------------------------------------------------
exp_port=$(free_port)
python3 "$root/tests/integration/prom/helper.py" exporter "$exp_port" "$work/exp" >"$work/exp.log" 2>&1 &
EXPORTER_PID=$!
# Scraped every 5 s (the 1 s default of e2e/local is too often for 2N series).
printf '[{"targets": ["127.0.0.1:%s"], "labels": {"__metrics_path__": "/bench", "__scrape_interval__": "5s", "__scrape_timeout__": "4s", "job": "bench"}}]\n' \
  "$exp_port" > "$PROMETHEUS_TARGETS_DIR/.bench.json.tmp" && mv "$PROMETHEUS_TARGETS_DIR/.bench.json.tmp" "$PROMETHEUS_TARGETS_DIR/bench.json"
for _ in $(seq 1 60); do
  curl -sf "$PROMETHEUS_URL/api/v1/query" --data-urlencode 'query=count(haproxy_server_limit_sessions)' | grep -q "\"$N\"" && break
  sleep 1
done
say "  Prometheus holds $(curl -sf "$PROMETHEUS_URL/api/v1/query" --data-urlencode 'query=count(haproxy_server_limit_sessions)' | sed 's/.*,"\([0-9]*\)"\]}\]}}/\1/') sidecars' limits"
fi

# --- measuring ---------------------------------------------------------------------------------
api_metrics() { # verb resource count, for the requests of the API server's own counter
  k get --raw /metrics 2>/dev/null | awk '
    /^apiserver_request_total\{/ {
      verb = $0; sub(/.*verb="/, "", verb); sub(/".*/, "", verb)
      res = $0; if (res ~ /[{,]resource="/) { sub(/.*[{,]resource="/, "", res); sub(/".*/, "", res) } else res = "-"
      sub_ = $0; if (sub_ ~ /subresource="[a-z]/) { sub(/.*subresource="/, "", sub_); sub(/".*/, "", sub_); res = res "/" sub_ }
      n[verb " " res] += $NF
    }
    END { for (x in n) print x, n[x] }' | sort
}
prom_query_stats() { # queries, seconds (the engine's own summary)
  curl -sf "$PROMETHEUS_URL/metrics" | awk '
    /^prometheus_engine_query_duration_seconds_count\{slice="inner_eval"\}/ {c = $NF}
    /^prometheus_engine_query_duration_seconds_sum\{slice="inner_eval"\}/ {s = $NF}
    END {print c + 0, s + 0}'
}
# The controller's /metrics is read once at each end of a window (as often as
# a Prometheus would scrape it), into $work/ctl.txt; ctl_metric reads that.
ctl_scrape() { curl -sf "http://127.0.0.1:$mport/metrics" >"$work/ctl.txt" || : >"$work/ctl.txt"; }
ctl_metric() { # NAME: the sum of a family's samples in the last scrape
  awk -v n="$1" '$1 == n || index($1, n "{") == 1 {s += $NF} END {print s + 0}' "$work/ctl.txt"
}
ctl_reasons() { # "reason count" of meshscaler_decisions_total in the last scrape
  awk -F'[{}" ]+' '/^meshscaler_decisions_total\{/ {print $3, $NF}' "$work/ctl.txt" | sort
}
ctl_bucket() { # NAME LE: a histogram bucket's count in the last scrape
  awk -v n="$1_bucket{le=\"$2\"}" '$1 == n {print $NF}' "$work/ctl.txt"
}
cpu_seconds() { awk '{print ($14 + $15) / 100}' "/proc/$1/stat"; }
rss_mib() { awk '/^VmRSS/ {r = $2} /^VmHWM/ {h = $2} END {printf "%.0f MiB (peak %.0f MiB)", r / 1024, h / 1024}' "/proc/$1/status"; }
# The control plane's processes, by e2e/local's PID files; cp_cpu prints their CPU
# seconds in this order.
CP_NAMES="kube-apiserver kube-controller-manager etcd prometheus${CP_EXTRA:+ $CP_EXTRA}"
cp_pid() { cat "$MESHSCALER_E2E_STATE/pids/$1.pid"; }
load() { uptime | sed 's/.*load average: /load /'; }
cp_cpu() { local c; for c in $CP_NAMES; do printf '%s ' "$(cpu_seconds "$(cat "$MESHSCALER_E2E_STATE/pids/$c.pid")")"; done; }
# cp_cpu_diff "BEFORE" "AFTER": "name seconds" for each, over the window.
cp_cpu_diff() {
  python3 - "$1" "$2" "$CP_NAMES" <<'PY'
import sys
a, b, names = sys.argv[1].split(), sys.argv[2].split(), sys.argv[3].split()
print(", ".join(f"{n} {float(y) - float(x):.2f} s" for n, x, y in zip(names, a, b)))
PY
}

# diff_api BEFORE AFTER: "verb resource delta" lines with a delta, biggest first
# (a key first seen in AFTER counts from 0).
diff_api() { join -j1 -a2 -e 0 -o 0,1.2,2.2 <(awk '{print $1"|"$2, $3}' "$1" | sort) <(awk '{print $1"|"$2, $3}' "$2" | sort) |
  awk '{d = $3 - $2; if (d > 0) print d, $1}' | sort -rn | awk '{split($2, a, "|"); printf "%s %s %d; ", a[1], a[2], $1}'; }
# api_count FILE-BEFORE FILE-AFTER VERB RESOURCE: one key's delta.
api_count() { join -j1 -a2 -e 0 -o 0,1.2,2.2 <(awk '{print $1"|"$2, $3}' "$1" | sort) <(awk '{print $1"|"$2, $3}' "$2" | sort) |
  awk -v k="$3|$4" '$1 == k {d = $3 - $2} END {print d + 0}'; }

# The deployment controller writes every new Deployment's status once (N writes, at
# its 20 requests/s): the background window starts when a 5 s window has none, or
# after BENCH_SETTLE seconds (default 300).
t0=$SECONDS
api_metrics >"$work/api.0"
for _ in $(seq 1 $(( ${BENCH_SETTLE:-300} / 5 ))); do
  sleep 5
  api_metrics >"$work/api.1"
  [ "$(api_count "$work/api.0" "$work/api.1" PUT deployments/status)" = 0 ] && break
  mv "$work/api.1" "$work/api.0"
done
say ""
say "background (no controller; the Deployments' first status writes done $((SECONDS - t0)) s after the objects), one 15 s window:"
api_metrics >"$work/api.0"
bg_cpu0=$(cp_cpu)
sleep 15
bg_cpu1=$(cp_cpu)
api_metrics >"$work/api.1"
say "  API requests: $(diff_api "$work/api.0" "$work/api.1")"
say "  CPU: $(cp_cpu_diff "$bg_cpu0" "$bg_cpu1")"
say "  kube-controller-manager RSS $(rss_mib "$(cp_pid kube-controller-manager)"); $(load)"

# latency_samples FIRST: BENCH_LATENCY samples on the Deployments FIRST, FIRST+1, ...:
# each one's sessions go from 50 to 80 (asks ceil(80 / 50) = 2 replicas) and a watch
# on the Deployment times the change of spec.replicas from the file's rename. The
# exporter serves the file at the next scrape (every 5 s), so both systems see the
# change through the same Prometheus.
latency_samples() {
  [ "$LATENCY" -gt 0 ] && [ -z "${BENCH_REUSE:-}" ] || return 0
  local first="$1" i j out all=""
  for j in $(seq 0 $((LATENCY - 1))); do
    i=$((first + j))
    [ "$i" -lt "$N" ] || break
    out=$(python3 - "$KUBECTL" "$KUBECONFIG" "bench-$((i / 100))" "w$i" "$i" "$work" "$N" "$LATENCY_TIMEOUT" <<'PY'
import random, select, subprocess, sys, time
kubectl, kubeconfig, ns, name, idx, work, n, timeout = sys.argv[1:9]
w = subprocess.Popen([kubectl, "--kubeconfig", kubeconfig, "-n", ns, "get", "deployment", name, "--watch",
                      "-o", "jsonpath={.spec.replicas}{\"\\n\"}"], stdout=subprocess.PIPE, text=True)
first = w.stdout.readline().strip()
# A random phase against the 15 s sync grid: a sample taken right after the last one
# scaled would start just after a sync and always wait a whole period.
time.sleep(random.uniform(0, 15))
with open(f"{work}/exp/overrides", "a") as f:
    f.write(f"{idx} 80\n")
subprocess.run(["python3", f"{work}/series.py", n, f"{work}/exp"], check=True)
t0 = time.time()
result = f"none in {timeout} s"
while time.time() - t0 < float(timeout):
    r, _, _ = select.select([w.stdout], [], [], 1.0)
    if r:
        line = w.stdout.readline().strip()
        if line and line != first:
            result = f"{time.time() - t0:.1f} s ({first} -> {line})"
            break
w.kill()
print(result)
PY
)
    all+="w$i: $out; "
  done
  say "  metric change to scale: $all"
}
run_mode() {
  local mode="$1" flags=() pid t_start synced_at w
  [[ "$mode" == dry-run ]] && flags=(--dry-run --output json)
  mport=$(free_port)
  hport=$(free_port)
  "$meshscaler_bin" controller --kubeconfig "$KUBECONFIG" --prometheus-url "$PROMETHEUS_URL" \
    --sync-period 15s --metrics-bind-address "127.0.0.1:$mport" --health-probe-bind-address "127.0.0.1:$hport" \
    --log-format json --log-level info "${flags[@]}" >"$work/$mode.out" 2>"$work/$mode.err" &
  pid=$!
  PIDS+=("$pid")
  t_start=$(date +%s.%N)
  for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$hport/readyz" >/dev/null && break; sleep 0.1; done
  synced_at=$(date +%s.%N)
  # The first full round: every object decided once.
  for _ in $(seq 1 1200); do
    ctl_scrape
    [ "$(ctl_metric meshscaler_decisions_total)" -ge "$N" ] 2>/dev/null && break
    sleep 0.25
  done
  say ""
  say "$mode, $N objects: caches synced $(python3 -c "print('%.1f' % ($synced_at - $t_start))") s after start;" \
    "every object decided once $(python3 -c "import time; print('%.1f' % (time.time() - $synced_at))") s after that"
  if [[ "$mode" == live ]]; then
    # The first status of every object goes out at the client's rate limit
    # (--kube-api-qps); "at rest" begins when the writers' queue is empty.
    # At most BENCH_DRAIN_WAIT s (default 300): a queue that does not drain is a
    # figure too (printed below), not a reason to wait forever.
    local t_drain=$SECONDS
    while [ $((SECONDS - t_drain)) -lt "${BENCH_DRAIN_WAIT:-300}" ]; do
      ctl_scrape
      [ "$(ctl_metric meshscaler_status_writes_queued)" = 0 ] && break
      sleep 1
    done
    say "  status writes queued at start drained $((SECONDS - t_drain)) s after that" \
      "($(ctl_metric meshscaler_status_writes_queued) still queued); measuring at rest"
  fi
  local d0 l0 r0 rs0 q0 qs0 c0 a0 w0 late0 lc0 cpc0 cpc1
  for w in $(seq 1 "$WINDOWS"); do
    ctl_scrape
    ctl_reasons >"$work/reasons.a"
    d0=$(ctl_metric meshscaler_decisions_total); r0=$(ctl_metric meshscaler_round_duration_seconds_count)
    rs0=$(ctl_metric meshscaler_round_duration_seconds_sum)
    lc0=$(ctl_bucket meshscaler_sync_lateness_seconds 15)
    late0=$(ctl_metric meshscaler_sync_lateness_seconds_count)
    w0=$(ctl_metric meshscaler_scales_total)
    read -r q0 qs0 < <(prom_query_stats)
    c0=$(cpu_seconds "$pid")
    cpc0=$(cp_cpu)
    api_metrics >"$work/api.a"
    if [ -n "${BENCH_PERF:-}" ] && [ "$w" -eq 1 ]; then
      # A profile of one window (perf from Debian's linux-perf; figures then carry its cost).
      perf record -F 999 -g -p "$pid" -o "${BENCH_PERF}-$mode.data" -- sleep 15 >/dev/null 2>&1
    else
      sleep 15
    fi
    local d1 r1 rs1 q1 qs1 c1 w1 late1 lc1
    ctl_scrape
    ctl_reasons >"$work/reasons.b"
    d1=$(ctl_metric meshscaler_decisions_total); r1=$(ctl_metric meshscaler_round_duration_seconds_count)
    rs1=$(ctl_metric meshscaler_round_duration_seconds_sum)
    lc1=$(ctl_bucket meshscaler_sync_lateness_seconds 15)
    late1=$(ctl_metric meshscaler_sync_lateness_seconds_count)
    w1=$(ctl_metric meshscaler_scales_total)
    read -r q1 qs1 < <(prom_query_stats)
    c1=$(cpu_seconds "$pid")
    cpc1=$(cp_cpu)
    api_metrics >"$work/api.b"
    python3 - "$d0" "$d1" "$r0" "$r1" "$rs0" "$rs1" "$q0" "$q1" "$qs0" "$qs1" "$c0" "$c1" "$late0" "$late1" "$lc0" "$lc1" "$w0" "$w1" "$(rss_mib "$pid")" "$w" <<'PY'
import sys
a = [float(x or 0) for x in sys.argv[1:19]]
d, r, rs, q, qs, c, late, lc, wr = (a[1]-a[0]), (a[3]-a[2]), (a[5]-a[4]), (a[7]-a[6]), (a[9]-a[8]), (a[11]-a[10]), (a[13]-a[12]), (a[15]-a[14]), (a[17]-a[16])
missed = late - lc
print(f"  15 s #{sys.argv[20]}: {d:.0f} decisions, {missed:.0f} synced later than their period, "
      f"{r:.0f} rounds ({(rs / r if r else 0):.2f} s each), controller CPU {c:.2f} s, RSS {sys.argv[19]}, "
      f"scale writes {wr:.0f}, Prometheus queries {q:.0f} ({qs:.2f} s)")
PY
    say "     decisions by reason: $(diff_api <(sed 's/^/r /' "$work/reasons.a") <(sed 's/^/r /' "$work/reasons.b") | sed 's/r //g')"
    say "     API requests (all clients): $(diff_api "$work/api.a" "$work/api.b")"
    say "     control plane CPU: $(cp_cpu_diff "$cpc0" "$cpc1"); $(load)"
  done
  [[ "$mode" != live ]] || latency_samples 0
  kill -TERM "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}



# --- masschange: half of N objects ask for more at once -------------------------------------
# ctl_labels NAME LABEL: "value count" of a family's samples by one label, last scrape.
ctl_labels() {
  awk -v n="$1" -v l="$2" 'index($1, n "{") == 1 {
      v = $1; if (index(v, l "=\"") == 0) next
      sub(".*[{,]" l "=\"", "", v); sub(/".*/, "", v); s[v] += $NF
    } END { for (x in s) print x, s[x] }' "$work/ctl.txt" | sort
}
# scaled_log T0 T1 TP: "count last lag" of the controller's "scaled" lines (one per scale
# write that landed; its own time stamp) up to T1 (the period's end), last = seconds after
# T0 (epoch) of the latest, lag = the longest after_decision (from the worker's decision
# to the write's answer) of the lines after TP (the period's start; "-": none). T0 is
# when the caches synced: the first round, which decides every object that asks for
# more, begins then (its decisions are made within "every object decided once").
scaled_log() {
  python3 - "$work/masschange.err" "$1" "$2" "$3" <<'PY'
import json, sys, datetime
n, last, lag = 0, None, None
for line in open(sys.argv[1], errors="replace"):
    if '"msg":"scaled"' not in line:
        continue
    try:
        j = json.loads(line)
    except ValueError:
        continue
    t = datetime.datetime.strptime(j["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()
    if t > float(sys.argv[3]):
        continue
    n += 1
    last = t if last is None or t > last else last
    a = j.get("after_decision")
    if t > float(sys.argv[4]) and a is not None:
        lag = a if lag is None or a > lag else lag
print(n, "-" if last is None else f"{last - float(sys.argv[2]):.1f}", "-" if lag is None else f"{lag:.1f}")
PY
}
run_masschange() {
  [ -n "$PODS" ] || { say "masschange needs BENCH_PODS=1 (Deployments whose pods exist)"; return 1; }
  local i pid t_start t_synced="" t_first="" w half=$(( (N + 1) / 2 ))
  # Every even Deployment's pods report 80 of 100 sessions: Utilization 80% against 50,
  # each asks ceil(1.6 x 1) = 2 replicas.
  for ((i = 0; i < N; i += 2)); do echo "$i 80"; done >>"$work/exp/overrides"
  python3 "$work/series.py" "$N" "$work/exp"
  for _ in $(seq 1 60); do
    [ "$(curl -sf "$PROMETHEUS_URL/api/v1/query" --data-urlencode 'query=count(haproxy_server_current_sessions == 80)' |
      sed -n 's/.*,"\([0-9]*\)"\]}\]}}/\1/p')" = "$half" ] && break
    sleep 1
  done
  say ""
  say "masschange, $N objects (never decided), $half of them asking 2 replicas at once; Prometheus has $(curl -sf "$PROMETHEUS_URL/api/v1/query" --data-urlencode 'query=count(haproxy_server_current_sessions == 80)' | sed -n 's/.*,"\([0-9]*\)"\]}\]}}/\1/p') sidecars at 80"
  mport=$(free_port)
  hport=$(free_port)
  : >"$work/ctl.txt"
  local q0 qs0 q1 qs1 c0=0 c1 api0="$work/api.m0" api1="$work/api.m1"
  read -r q0 qs0 < <(prom_query_stats)
  api_metrics >"$api0"
  cp_cpu >"$work/cpc.0"
  ctl_labels meshscaler_kube_client_requests_total verb >"$work/verbs.0"
  ctl_labels meshscaler_kube_requests_total operation >"$work/ops.0"
  : >"$work/reasons.0"
  local d0=0 r0=0 w0=0 e0=0 mq0=0
  "$meshscaler_bin" controller --kubeconfig "$KUBECONFIG" --prometheus-url "$PROMETHEUS_URL" \
    --sync-period 15s --metrics-bind-address "127.0.0.1:$mport" --health-probe-bind-address "127.0.0.1:$hport" \
    --log-format json --log-level info >"$work/masschange.out" 2>"$work/masschange.err" &
  pid=$!
  PIDS+=("$pid")
  t_start=$(date +%s.%N)
  local t_prev=$t_start t_now
  for w in $(seq 1 "$WINDOWS"); do
    # Until the first round is whole, /metrics is read every second (that costs the
    # controller a little CPU in the first window); then once per period. A period ends
    # 15 s after the previous one was read (reading takes seconds on a loaded machine);
    # its real span is printed.
    while python3 -c "import sys, time; sys.exit(0 if time.time() < $t_prev + 15 - 0.05 else 1)"; do
      if [ -z "$t_first" ]; then
        [ -n "$t_synced" ] || ! curl -sf "http://127.0.0.1:$hport/readyz" >/dev/null || t_synced=$(date +%s.%N)
        ctl_scrape
        [ "$(ctl_metric meshscaler_decisions_total)" -ge "$N" ] 2>/dev/null && t_first=$(date +%s.%N)
        sleep 1
      else
        sleep "$(python3 -c "print(max(0.0, $t_prev + 15 - __import__('time').time()))")"
      fi
    done
    local d1 r1 w1 e1 mq1 queued scaled
    ctl_scrape
    t_now=$(date +%s.%N)
    read -r q1 qs1 < <(prom_query_stats)
    c1=$(cpu_seconds "$pid")
    api_metrics >"$api1"
    cp_cpu >"$work/cpc.1"
    ctl_labels meshscaler_kube_client_requests_total verb >"$work/verbs.1"
    ctl_labels meshscaler_kube_requests_total operation >"$work/ops.1"
    ctl_reasons >"$work/reasons.1"
    d1=$(ctl_metric meshscaler_decisions_total); r1=$(ctl_metric meshscaler_round_duration_seconds_count)
    w1=$(ctl_metric meshscaler_scales_total); e1=$(ctl_metric meshscaler_events_dropped_total)
    mq1=$(ctl_metric meshscaler_prometheus_queries_total); queued=$(ctl_metric meshscaler_status_writes_queued)
    scaled=$(scaled_log "${t_synced:-$t_start}" "$t_now" "$t_prev")
    python3 - "$w" "$d0" "$d1" "$r0" "$r1" "$q0" "$q1" "$qs0" "$qs1" "$c0" "$c1" "$w0" "$w1" "$e0" "$e1" "$mq0" "$mq1" \
      "$(rss_mib "$pid")" "$scaled" "$half" "$queued" "$t_start" "${t_synced:-}" "${t_first:-}" "$t_prev" "$t_now" <<'PY'
import sys
a = sys.argv
w = a[1]
f = [float(x or 0) for x in a[2:18]]
d, r, q, qs, c, wr, ev, mq = (f[i + 1] - f[i] for i in range(0, 16, 2))
n_scaled, last, lag = a[19].split()
t_start, t_synced, t_first = float(a[22]), a[23], a[24]
extra = ""
if w == "1":
    extra = (f"; caches synced {float(t_synced) - t_start:.1f} s after start" if t_synced else "") + \
            (f", every object decided once {float(t_first) - t_start:.1f} s after start" if t_first else ", not every object decided yet")
span = f"{float(a[25]) - t_start:.1f}-{float(a[26]) - t_start:.1f} s"
print(f"  period {w} ({span}){extra}: {d:.0f} decisions in {r:.0f} rounds, "
      f"Prometheus queries {q:.0f} ({qs:.2f} s of evaluation; meshscaler sent {mq:.0f}), controller CPU {c:.2f} s, RSS {a[18]}, "
      f"scale writes {wr:.0f} (landed so far {n_scaled} of {a[20]}; the last {last} s after the first round began; "
      f"the longest from decision to write in this period {lag} s), "
      f"status writes queued {float(a[21]):.0f}, Events dropped {ev:.0f}")
PY
    say "     decisions by reason: $(diff_api <(sed 's/^/r /' "$work/reasons.0") <(sed 's/^/r /' "$work/reasons.1") | sed 's/r //g')"
    say "     meshscaler's requests by verb: $(diff_api <(sed 's/^/r /' "$work/verbs.0") <(sed 's/^/r /' "$work/verbs.1") | sed 's/r //g')"
    say "     by operation: $(diff_api <(sed 's/^/r /' "$work/ops.0") <(sed 's/^/r /' "$work/ops.1") | sed 's/r //g')"
    say "     API server (all clients): deployments/scale PUT $(api_count "$api0" "$api1" PUT deployments/scale) PATCH $(api_count "$api0" "$api1" PATCH deployments/scale);" \
      "meshautoscalers/status PATCH $(api_count "$api0" "$api1" PATCH meshautoscalers/status) PUT $(api_count "$api0" "$api1" PUT meshautoscalers/status);" \
      "events POST $(api_count "$api0" "$api1" POST events) PATCH $(api_count "$api0" "$api1" PATCH events); pods POST $(api_count "$api0" "$api1" POST pods)"
    say "     control plane CPU: $(cp_cpu_diff "$(cat "$work/cpc.0")" "$(cat "$work/cpc.1")"); $(load)"
    d0=$d1 r0=$r1 q0=$q1 qs0=$qs1 c0=$c1 w0=$w1 e0=$e1 mq0=$mq1 t_prev=$t_now
    mv "$api1" "$api0"; mv "$work/cpc.1" "$work/cpc.0"; mv "$work/verbs.1" "$work/verbs.0"; mv "$work/ops.1" "$work/ops.0"; mv "$work/reasons.1" "$work/reasons.0"
  done
  say "  Deployments at 2 replicas: $(k get deploy -A --no-headers 2>/dev/null | awk '{split($3, a, "/"); if (a[2] == 2) n++} END {print n + 0}') of $half asked"
  kill -TERM "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}

# --- the peer: HPA + prometheus-adapter ------------------------------------------------------------
# The adapter's one rule: the sidecars' sessions, summed over the series the HPA's
# selector names in the HPA's namespace.
adapter_config() {
  cat <<'EOF'
externalRules:
- seriesQuery: 'haproxy_server_current_sessions{namespace!="",app!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
  name: {matches: "^haproxy_server_current_sessions$", as: "haproxy_server_current_sessions"}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
EOF
}
# adapter_requests: the external metric requests the adapter has served (its own
# apiserver_request_total; the API server does not count what it proxies there).
adapter_requests() {
  curl -sf --cacert "$MESHSCALER_E2E_STATE/pki/ca.crt" --cert "$MESHSCALER_E2E_STATE/pki/admin.crt" \
    --key "$MESHSCALER_E2E_STATE/pki/admin.key" "https://127.0.0.1:$ADAPTER_PORT/metrics" |
    awk '/^apiserver_request_total\{/ && /group="external.metrics.k8s.io"/ {s += $NF} END {print s + 0}'
}

run_hpa() {
  local apid kpid t0 i c0 c1 q0 qs0 q1 qs1 cpc0 cpc1 pc0 pc1 w gets writes
  adapter_config >"$work/adapter.yaml"
  "$LOCAL" adapter start "$work/adapter.yaml" >"$work/adapter.out" 2>&1 || { cat "$work/adapter.out"; return 1; }
  eval "$(grep '^ADAPTER_PORT=' "$work/adapter.out")"
  apid=$(cat "$MESHSCALER_E2E_STATE/pids/prometheus-adapter.pid")
  kpid=$(cat "$MESHSCALER_E2E_STATE/pids/kube-controller-manager.pid")
  python3 - "$N" "$work" <<'PY'
import sys
n, work = int(sys.argv[1]), sys.argv[2]
chunk = 500
for start in range(0, n, chunk):
    with open(f"{work}/hpa-{start // chunk:04d}.yaml", "w") as f:
        for i in range(start, min(n, start + chunk)):
            f.write(f"""---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {{name: w{i}, namespace: bench-{i // 100}}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: w{i}}}
  minReplicas: 1
  maxReplicas: 10
  metrics:
  - type: External
    external:
      metric:
        name: haproxy_server_current_sessions
        selector: {{matchLabels: {{app: w{i}}}}}
      target: {{type: AverageValue, averageValue: "50"}}
""")
PY
  say ""
  say "hpa, $N objects: prometheus-adapter $(grep -o 'prometheus-adapter on .*' "$work/adapter.out" | head -1), external metric of w0: $(k get --raw "/apis/external.metrics.k8s.io/v1beta1/namespaces/bench-0/haproxy_server_current_sessions?labelSelector=app%3Dw0" 2>&1 | grep -o '"value":"[^"]*"')"
  # The first pass: every HPA's first sync writes its status (conditions, current
  # metrics); counted from the API server's own counter, which is cheap to read
  # (listing 10,000 HPAs every few seconds is not).
  api_metrics >"$work/api.h0"
  t0=$(date +%s.%N)
  ls "$work"/hpa-*.yaml | xargs -P 2 -n 1 "$KUBECTL" --kubeconfig "$KUBECONFIG" create -f >/dev/null 2>"$work/hpa.err" ||
    { tail -n 5 "$work/hpa.err"; say "creating the HPAs failed"; return 1; }
  say "  $N HPAs created in $(python3 -c "import time; print('%.1f' % (time.time() - $t0))") s"
  local limit=$((SECONDS + ${BENCH_HPA_FIRST_PASS:-300})) done=0
  while [ $SECONDS -lt $limit ]; do
    api_metrics >"$work/api.h1"
    done=$(api_count "$work/api.h0" "$work/api.h1" PUT horizontalpodautoscalers/status)
    [ "$done" -ge "$N" ] && break
    sleep 5
  done
  say "  first pass: $done of $N HPAs had their first status written $(python3 -c "import time; print('%.1f' % (time.time() - $t0))") s after the first was created"
  for w in $(seq 1 "$WINDOWS"); do
    read -r q0 qs0 < <(prom_query_stats)
    c0=$(cpu_seconds "$apid"); cpc0=$(cp_cpu); pc0=$(adapter_requests)
    api_metrics >"$work/api.a"
    sleep 15
    read -r q1 qs1 < <(prom_query_stats)
    c1=$(cpu_seconds "$apid"); cpc1=$(cp_cpu); pc1=$(adapter_requests)
    api_metrics >"$work/api.b"
    gets=$(api_count "$work/api.a" "$work/api.b" GET deployments/scale)
    writes=$(api_count "$work/api.a" "$work/api.b" PUT horizontalpodautoscalers/status)
    python3 - "$w" "$gets" "$writes" "$c0" "$c1" "$q0" "$q1" "$qs0" "$qs1" "$pc0" "$pc1" "$(rss_mib "$apid")" <<'PY'
import sys
w, gets, writes = sys.argv[1:4]
c0, c1, q0, q1, qs0, qs1, pc0, pc1 = map(float, sys.argv[4:12])
print(f"  15 s #{w}: {gets} HPA syncs (GETs of deployments/scale), {writes} HPA status writes, "
      f"external metric requests served by the adapter {pc1 - pc0:.0f}, adapter CPU {c1 - c0:.2f} s, RSS {sys.argv[12]}, "
      f"Prometheus queries {q1 - q0:.0f} ({qs1 - qs0:.2f} s)")
PY
    say "     API requests (all clients): $(diff_api "$work/api.a" "$work/api.b")"
    say "     control plane CPU: $(cp_cpu_diff "$cpc0" "$cpc1") (kube-controller-manager's background: see above); kube-controller-manager RSS $(rss_mib "$kpid"); $(load)"
  done
  latency_samples "$LATENCY"
  # Gone before a meshscaler mode that follows (MODES "hpa live"), so nothing fights it.
  k delete hpa --all -A --timeout=300s >/dev/null 2>&1
  "$LOCAL" adapter stop >/dev/null 2>&1
}

for mode in $MODES; do
  case "$mode" in
    hpa) run_hpa ;;
    masschange) run_masschange ;;
    *) run_mode "$mode" ;;
  esac
done
