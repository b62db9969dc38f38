# t_latency.sh - test 6: time from a metric change (the moment the exporter
# file is renamed into place) to the Deployment's spec.replicas update, seen
# through a watch, at --sync-period=15s and --sync-period=1s.
#
# The load alternates between 20 and 30 (2 and 3 replicas); scale-up and
# scale-down are immediate (windows 0, policies of 100 pods / 100 % per
# second), so the figure is the controller's reaction time plus Prometheus'
# 1 s scrape. Before sample i the test waits i*P/N seconds after the previous
# change, so the metric changes at spread phases of the sync period rather
# than always just after a sync. The times are figures (printed, min/median/max);
# the checks assert what a slow machine cannot break: every change reached
# spec.replicas (within a generous P + 30 s), and the 1 s sync period reacts faster
# than the 15 s one (median against median).

# first_change_after FILE T VALUE : the time of the first watch line after T
# whose replicas are VALUE, or nothing.
first_change_after() {
  awk -v t="$2" -v v="$3" '$1 > t && $2 == v {print $1; exit}' "$1"
}

# stats SAMPLES... : "min X s, median Y s, max Z s (n=N)"
stats() {
  python3 -c 'import sys,statistics as s; v=sorted(map(float,sys.argv[1:]))
print("min %.2f s, median %.2f s, max %.2f s (n=%d; samples %s)" % (v[0], s.median(v), v[-1], len(v), " ".join("%.2f" % x for x in v)))' "$@"
}

# measure NS PERIOD N : N samples at --sync-period PERIOD (seconds); prints
# the figure, checks that every change was seen and keeps the median in
# LATENCY_MEDIAN[PERIOD].
measure() {
  local ns="$1" p="$2" n="$3" name="lat$2"
  ctl_start "$name" "$RESTRICTED" --namespace "$ns" --sync-period "${p}s" ||
    { fail "latency ${p}s: controller never got ready"; return; }
  if ! wait_for $((p + 15)) has_decision "$ns" lat; then fail "latency ${p}s: no first decision"; return; fi
  local watch="$WORK/watch-$p.txt"
  bg "$watch" "$WORK/watch-$p.err" python3 "$here/stamp.py" "$KUBECTL" get deployment lat -n "$ns" -w \
    -o 'jsonpath={.spec.replicas}{"\n"}'
  local wpid=$LAST_PID
  sleep 1
  local cur i load want t_change lat samples=() bad=""
  cur="$(replicas "$ns" lat)"
  for ((i = 0; i < n; i++)); do
    sleep "$(python3 -c "print($i * $p / $n)")"
    if [[ "$cur" == 2 ]]; then load=30 want=3; else load=20 want=2; fi
    series_set test_load "$ns" lat "$load"
    publish
    t_change=$PUBLISHED_AT
    if ! wait_for $((p + 30)) eval "[[ -n \"\$(first_change_after $watch $t_change $want)\" ]]"; then
      bad+="sample $i: no change to $want within $((p + 30)) s; "
      cur="$(replicas "$ns" lat)"
      continue
    fi
    lat="$(python3 -c "print('%.3f' % ($(first_change_after "$watch" "$t_change" "$want") - $t_change))")"
    samples+=("$lat")
    cur="$want"
  done
  stop_pid "$wpid"
  ctl_stop "$name"
  if [[ ${#samples[@]} -eq 0 ]]; then fail "latency at --sync-period=${p}s: no sample ($bad)"; return; fi
  local fig
  fig="$(stats "${samples[@]}")"
  echo "LATENCY --sync-period=${p}s: $fig"
  LATENCY_FIGURES+=("--sync-period=${p}s: $fig")
  LATENCY_MEDIAN[$p]="$(printf '%s\n' "${samples[@]}" | python3 -c 'import sys, statistics; print(statistics.median(map(float, sys.stdin)))')"
  if [[ -z "$bad" ]]; then ok "latency at --sync-period=${p}s: all $n changes reached spec.replicas ($fig)"
  else fail "latency at --sync-period=${p}s: $bad"; fi
}

LATENCY_FIGURES=()
declare -gA LATENCY_MEDIAN=()
test_latency() {
  new_ns latency || { fail "latency: namespace"; return; }
  local ns="$NS"
  deployment "$ns" lat 2
  set_and_wait test_load "$ns" lat 20 || fail "latency: series not in Prometheus"
  mas_apply "$ns" <<YAML
apiVersion: autoscaling.meshscaler.io/v1alpha1
kind: MeshAutoscaler
metadata: {name: lat}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: lat}
  maxReplicas: 10
$(load_metric)
  behavior:
    scaleUp: {stabilizationWindowSeconds: 0, policies: [{type: Pods, value: 100, periodSeconds: 1}]}
    scaleDown: {stabilizationWindowSeconds: 0, policies: [{type: Percent, value: 100, periodSeconds: 1}]}
YAML
  measure "$ns" 1 6
  measure "$ns" 15 5
  # The direction: a shorter sync period reacts sooner (expected medians ~1.5 s and ~8 s).
  local m1="${LATENCY_MEDIAN[1]:-}" m15="${LATENCY_MEDIAN[15]:-}"
  if [[ -n "$m1" && -n "$m15" ]] && flt "$m1" "$m15"; then
    ok "latency: --sync-period=1s reacts sooner than 15s (median $m1 s < $m15 s)"
  else fail "latency: median at --sync-period=1s '${m1}' s is not below 15s's '${m15}' s"; fi
}
