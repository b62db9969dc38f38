#!/usr/bin/env bash
# bench/node.sh - figures of the local cluster's node (e2e/local), printed, not asserted:
#
#   - `e2e/local up` and `down` wall time (with the binaries and images cached);
#   - time for a Deployment of N app+sidecar pods (e2e/workloads/web.yaml) to be Ready,
#     N = 1, 10, 50;
#   (the pods request 10m + 5m of CPU here instead of the workload's 50m + 20m, with
#   which 2 cores fit 27 of them: the scheduler, not the machine, would set the limit)
#   - memory (RSS) of the node's processes and of the pods, idle and with 50 pods;
#   - how many pods this machine holds: one Deployment grown in steps of STEP pods up
#     to the kubelet's maxPods, each step timed, until a step takes longer than LIMIT
#     seconds or pods stop becoming Ready.
#
#   bench/node.sh [STEP (10)] [LIMIT (90)]
#
# It brings up its own environment (a private state dir) and takes it down; the node is
# one per machine, so no other e2e/local environment may be up.
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STEP="${1:-10}"
LIMIT="${2:-90}"
export MESHSCALER_E2E_STATE="${BENCH_STATE:-/tmp/meshscaler-bench-node}"
LOCAL="$REPO/e2e/local"

now() { date +%s.%N; }
since() { python3 -c "import sys,time; print('%.1f' % (time.time() - float(sys.argv[1])))" "$1"; }
trap '"$LOCAL" down >/dev/null 2>&1' EXIT

"$LOCAL" down >/dev/null 2>&1
t0=$(now)
"$LOCAL" up >/dev/null 2>"$MESHSCALER_E2E_STATE.up.log" || { tail -n 20 "$MESHSCALER_E2E_STATE.up.log"; exit 1; }
echo "up (binaries and images cached): $(since "$t0") s"
eval "$("$LOCAL" env)"
k() { "$KUBECTL" "$@"; }

# rss NAME...: the summed RSS in MiB of the state dir's processes with these PID files.
rss() {
  local kb=0 n pid
  for n in "$@"; do
    pid="$(cat "$MESHSCALER_E2E_STATE/pids/$n.pid" 2>/dev/null)" || continue
    kb=$((kb + $(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)))
  done
  echo $((kb / 1024))
}
shims_rss() {
  local kb=0 pid
  for pid in $(pgrep -f "containerd-shim-runc-v2 .*$MESHSCALER_E2E_STATE"); do
    kb=$((kb + $(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)))
  done
  echo $((kb / 1024))
}
pods_mib() { echo $(( $(cat /sys/fs/cgroup/memory/meshscaler-e2e/kubepods/memory.usage_in_bytes 2>/dev/null || echo 0) / 1048576 )); }
memory() {
  echo "memory ($1): kubelet $(rss kubelet) MiB, containerd $(rss containerd) MiB, shims $(shims_rss) MiB," \
    "kube-proxy $(rss kube-proxy) MiB, kube-scheduler $(rss kube-scheduler) MiB; pods (cgroup) $(pods_mib) MiB;" \
    "control plane: kube-apiserver $(rss kube-apiserver) MiB, etcd $(rss etcd) MiB, kube-controller-manager $(rss kube-controller-manager) MiB"
}
memory "idle, metrics-server only"

ready() { [ "$(k -n bench get deploy app -o jsonpath='{.status.readyReplicas}' 2>/dev/null)" = "$1" ]; }
# scale_to N: set the replicas and wait until N are Ready (at most LIMIT s); prints the time.
scale_to() {
  local t deadline=$((SECONDS + LIMIT))
  t=$(now)
  k -n bench scale deployment app --replicas="$1" >/dev/null
  until ready "$1"; do
    [ $SECONDS -lt $deadline ] || { echo "timeout"; return 1; }
    sleep 0.2
  done
  since "$t"
}

fresh() {
  k delete namespace bench --wait=true --timeout=180s >/dev/null 2>&1
  k create namespace bench >/dev/null
  "$REPO/e2e/workloads/render" "$REPO/e2e/workloads/web.yaml" app REPLICAS=0 \
    APP_CPU_REQUEST=10m SIDECAR_CPU_REQUEST=5m | k -n bench apply -f - >/dev/null
}

for n in 1 10 50; do
  fresh
  echo "Deployment of $n pods Ready after $(scale_to "$n") s"
done
memory "50 app+sidecar pods"

fresh
max="$(k get node "$MESHSCALER_E2E_NODE" -o jsonpath='{.status.allocatable.pods}')"
system="$(k get pods -A --field-selector spec.nodeName="$MESHSCALER_E2E_NODE" --no-headers | wc -l)"
echo "capacity: maxPods $max, $system system pod(s); steps of $STEP, a step may take $LIMIT s"
n=0
while [ $((n + STEP)) -le $((max - system)) ]; do
  n=$((n + STEP))
  t="$(scale_to "$n")" || { echo "  $n pods: not all Ready after $LIMIT s ($(k -n bench get deploy app -o jsonpath='{.status.readyReplicas}') Ready)"; break; }
  t_api="$( { /usr/bin/time -f %e "$KUBECTL" get pods -A >/dev/null; } 2>&1 )"
  echo "  $n pods: step Ready in $t s; kubectl get pods -A ${t_api} s; load $(cut -d' ' -f1 /proc/loadavg); pods $(pods_mib) MiB"
done
memory "$n pods"
t0=$(now)
k delete namespace bench --wait=true --timeout=300s >/dev/null 2>&1
echo "deleting $n pods: $(since "$t0") s"
t0=$(now)
"$LOCAL" down >/dev/null 2>&1
echo "down: $(since "$t0") s"
trap - EXIT
