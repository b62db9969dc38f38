#!/usr/bin/env bash
# bench/prometheus.sh - run bench_prometheus against a real Prometheus (the
# Debian 2.42 package) holding series for 10,000 workloads: one HAProxy
# sidecar pod each (current/limit sessions), its istio-proxy CPU counter
# (cAdvisor) and CPU limit (kube-state-metrics), a per-workload in-flight
# gauge, and one edge balancer. The exposition is generated, served by
# tests/integration/prom/helper.py and scraped every 5 s.
#
#   bench/prometheus.sh [OBJECTS...]      default: 1000 10000
#
# MS_BENCH_NAIVE_MAX=10000 also times the unbatched design at 10,000 objects.
# Builds Release into $MS_BENCH_BUILD (default build-bench). Everything runs
# on 127.0.0.1 and is stopped by PID on exit.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${MS_BENCH_BUILD:-$root/build-bench}"
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(1000 10000)
# shellcheck source=../tests/integration/prom/lib.sh
source "$root/tests/integration/prom/lib.sh"

work="$(mktemp -d "${TMPDIR:-/tmp}/meshscaler-bench-prom.XXXXXX")"
trap 'it_stop_all; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

max=0
for n in "${sizes[@]}"; do ((n > max)) && max=$n; done

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${MS_BENCH_CMAKE_ARGS:-} >/dev/null &&
  ninja -C "$build" bench_prometheus >/dev/null || { echo "build failed"; exit 1; }

mkdir -p "$work/exp"
python3 - "$max" "$work/exp/bench.prom" <<'PY'
import sys
n, path = int(sys.argv[1]), sys.argv[2]
out = []
def family(name, kind):
    out.append("# TYPE %s %s" % (name, kind))
family("haproxy_server_current_sessions", "gauge")
for i in range(n):
    out.append('haproxy_server_current_sessions{namespace="bench-%d",pod="w%d-5d8f7c9b6-x2k4p",proxy="app",server="app1"} %d' % (i // 100, i, i % 50))
family("haproxy_server_limit_sessions", "gauge")
for i in range(n):
    out.append('haproxy_server_limit_sessions{namespace="bench-%d",pod="w%d-5d8f7c9b6-x2k4p",proxy="app",server="app1"} 100' % (i // 100, i))
family("container_cpu_usage_seconds_total", "counter")
for i in range(n):
    out.append('container_cpu_usage_seconds_total{namespace="bench-%d",pod="w%d-5d8f7c9b6-x2k4p",container="istio-proxy"} {{counter:0.%02d}}' % (i // 100, i, 10 + i % 80))
family("kube_pod_container_resource_limits", "gauge")
for i in range(n):
    out.append('kube_pod_container_resource_limits{namespace="bench-%d",pod="w%d-5d8f7c9b6-x2k4p",container="istio-proxy",resource="cpu",unit="core"} 1' % (i // 100, i))
family("bench_requests_in_flight", "gauge")
for i in range(n):
    out.append('bench_requests_in_flight{namespace="bench-%d",workload="w%d"} %d' % (i // 100, i, i % 30))
family("bench_edge_current_sessions", "gauge")
out.append("bench_edge_current_sessions 1200")
family("bench_edge_limit_sessions", "gauge")
out.append("bench_edge_limit_sessions 20000")
open(path, "w").write("\n".join(out) + "\n")
PY

prom_port=$(it_port)
exp_port=$(it_port)
it_start "$work/exp.log" python3 "$root/tests/integration/prom/helper.py" exporter "$exp_port" "$work/exp"
# 5 s scrapes of $max workloads; a scrape may take a second or two here.
prom_start "$work/prom" "$prom_port" 5s
prom_target "$work/prom" bench "127.0.0.1:$exp_port" /bench
it_wait_http "http://127.0.0.1:$prom_port/-/ready" 30 || exit 1
prom_wait_up "$prom_port" bench 60 || exit 1
# rate() needs two samples of every counter.
echo "waiting 15 s for three scrapes of $((max * 5)) series ..."
sleep 15

url="http://127.0.0.1:$prom_port"
for n in "${sizes[@]}"; do
  echo
  "$build/bench_prometheus" --url "$url" --objects "$n" --ticks 3
  echo
  extra=()
  # Also time the one-query-per-object design (5 queries an object), up to
  # MS_BENCH_NAIVE_MAX objects (default 1000: 10,000 take minutes).
  [[ $n -le ${MS_BENCH_NAIVE_MAX:-1000} ]] && extra=(--naive)
  "$build/bench_prometheus" --url "$url" --objects "$n" --ticks 2 --per-object-query "${extra[@]}"
done
