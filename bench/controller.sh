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
# Per 15 s window (the controller's /metrics read once at each end, as a
# Prometheus scraping every 15 s would): decisions; syncs later than their period (objects that
# missed it); rounds and their wall time; controller CPU seconds and RSS; API
# requests by verb and resource (the API server's own apiserver_request_total,
# minus the background measured before the controller starts: the controller
# manager, pod-sd and Prometheus); Prometheus queries and their time
# (Prometheus' own prometheus_engine_query_duration_seconds).
#
# The Deployments are paused (spec.paused: no ReplicaSet, no pod, so 10,000 of
# them stay cheap for the control plane); every sidecar reports 50 of 100
# sessions against a 50% target, so at rest nothing should change: 0 writes.
# Builds Release into $MS_BENCH_BUILD (default build-bench). Its own state
# dir; brings it down at the end.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
N="${1:-1000}"
WINDOWS="${2:-4}"
MODES="${3:-dry-run live}"
build="${MS_BENCH_BUILD:-$root/build-bench}"
export MESHSCALER_E2E_STATE="${BENCH_STATE:-/tmp/meshscaler-bench-controller}"
LOCAL="$root/e2e/local"
work="$(mktemp -d "${TMPDIR:-/tmp}/meshscaler-bench-ctl.XXXXXX")"
PIDS=()

cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  if [ -n "${BENCH_KEEP:-}" ]; then
    say "BENCH_KEEP: the environment and the exporter stay up ($MESHSCALER_E2E_STATE)"
    return
  fi
  [ -z "${EXPORTER_PID:-}" ] || kill "$EXPORTER_PID" 2>/dev/null
  wait 2>/dev/null
  "$LOCAL" down >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { printf '%s\n' "$*"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null &&
  ninja -C "$build" meshscaler >/dev/null || { say "build failed"; exit 1; }

# BENCH_REUSE=1: the environment, objects and exporter of an earlier BENCH_KEEP=1 run.
if [ -z "${BENCH_REUSE:-}" ]; then
"$LOCAL" down >/dev/null 2>&1
"$LOCAL" up --no-node >"$work/up.log" 2>&1 || { tail -n 20 "$work/up.log"; exit 1; }
fi
eval "$("$LOCAL" env)"
k() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }
k apply -f "$root/manifests/10-crd.yaml" >/dev/null
k wait --for=condition=Established --timeout=60s crd/meshautoscalers.autoscaling.meshscaler.io >/dev/null

# --- the objects --------------------------------------------------------------------------
if [ -z "${BENCH_REUSE:-}" ]; then
nns=$(( (N + 99) / 100 ))
say "creating $N Deployments and MeshAutoscalers in $nns namespaces ..."
t0=$SECONDS
mkdir -p "$work/exp"
python3 - "$N" "$work" <<'PY'
import sys
n, work = int(sys.argv[1]), sys.argv[2]
nns = (n + 99) // 100
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
spec:
  paused: true
  replicas: 2
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
  metrics:
  - name: sidecar
    type: SidecarConcurrency
    sidecarConcurrency: {{proxy: haproxy}}
    target: {{type: Utilization, averageUtilization: 50}}
""")
with open(f"{work}/exp/bench.prom", "w") as f:
    out = ["# TYPE haproxy_server_current_sessions gauge"]
    for i in range(n):
        out.append(f'haproxy_server_current_sessions{{namespace="bench-{i // 100}",pod="w{i}-5d8f7c9b6-x2k4p",proxy="app",server="app"}} 50')
    out.append("# TYPE haproxy_server_limit_sessions gauge")
    for i in range(n):
        out.append(f'haproxy_server_limit_sessions{{namespace="bench-{i // 100}",pod="w{i}-5d8f7c9b6-x2k4p",proxy="app",server="app"}} 100')
    f.write("\n".join(out) + "\n")
PY
k apply -f "$work/ns.yaml" >/dev/null
# Two kubectl at a time: the API server has the other core.
ls "$work"/objects-*.yaml | xargs -P 2 -n 1 "$KUBECTL" --kubeconfig "$KUBECONFIG" create -f >/dev/null 2>"$work/create.err" ||
  { tail -n 5 "$work/create.err"; say "creating the objects failed"; exit 1; }
say "  created in $((SECONDS - t0)) s: $(k get deploy -A --no-headers | wc -l) Deployments, $(k get mas -A --no-headers | wc -l) MeshAutoscalers"

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

# diff_api BEFORE AFTER: "verb resource delta" lines with a delta, biggest first.
diff_api() { join -j1 <(awk '{print $1"|"$2, $3}' "$1" | sort) <(awk '{print $1"|"$2, $3}' "$2" | sort) |
  awk '{d = $3 - $2; if (d > 0) print d, $1}' | sort -rn | awk '{split($2, a, "|"); printf "%s %s %d; ", a[1], a[2], $1}'; }

say ""
say "background (no controller), one 15 s window:"
api_metrics >"$work/api.0"
sleep 15
api_metrics >"$work/api.1"
say "  API requests: $(diff_api "$work/api.0" "$work/api.1")"

run_mode() {
  local mode="$1" flags=() pid t_start synced_at w
  [[ "$mode" == dry-run ]] && flags=(--dry-run --output json)
  mport=$(free_port)
  hport=$(free_port)
  "$build/meshscaler" controller --kubeconfig "$KUBECONFIG" --prometheus-url "$PROMETHEUS_URL" \
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
    local t_drain=$SECONDS
    for _ in $(seq 1 1200); do
      ctl_scrape
      [ "$(ctl_metric meshscaler_status_writes_queued)" = 0 ] && break
      sleep 1
    done
    say "  status writes queued at start drained $((SECONDS - t_drain)) s after that" \
      "($(ctl_metric meshscaler_status_writes_queued) still queued); measuring at rest"
  fi
  local d0 l0 r0 rs0 q0 qs0 c0 a0 w0 late0 lc0
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
  done
  kill -TERM "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}

for mode in $MODES; do run_mode "$mode"; done
