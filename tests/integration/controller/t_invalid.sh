# t_invalid.sh - test 3: the CRD refuses invalid MeshAutoscalers (the full set
# is tests/integration/crd/run.sh); valid ones pointing at a missing target or
# an unknown kind get AbleToScale=False and a Warning event, while another
# object in the same namespace keeps scaling; creating the missing target
# later lets its MeshAutoscaler work.

# refused NS WHAT EXPECTED_MESSAGE : the YAML on stdin is refused with it.
refused() {
  local out
  if out="$(k create -n "$1" -f - 2>&1)"; then
    fail "CRD accepts $2"
  elif [[ "$out" == *"$3"* ]]; then
    ok "CRD refuses $2: \"$3\""
  else
    fail "CRD refuses $2 but without \"$3\": $out"
  fi
}

# mas_to NAME APIVERSION KIND TARGET : a valid MeshAutoscaler of NAME scaling TARGET.
mas_to() {
  cat <<YAML
apiVersion: autoscaling.meshscaler.io/v1alpha1
kind: MeshAutoscaler
metadata: {name: $1}
spec:
  scaleTargetRef: {apiVersion: $2, kind: $3, name: $4}
  maxReplicas: 10
$(load_metric)
YAML
}

# bad_flags NS : refusals of the command line, and one address for both
# endpoints (a chart that sets both to :8080): refused, or both served.
bad_flags() {
  local ns="$1" rc err="$WORK/flags.err"
  "$MS" controller --kubeconfig "$RESTRICTED" --prometheus-url "$PROMETHEUS_URL" --sync-period 15x \
    >/dev/null 2>"$err" </dev/null
  rc=$?
  if [[ $rc == 2 && "$(cat "$err")" == *--sync-period* ]]; then ok "--sync-period 15x: exit 2, \"$(head -n 1 "$err" | cut -c1-120)\""
  else fail "--sync-period 15x: want exit 2 naming the flag, got exit $rc: $(head -n 1 "$err")"; fi
  local port
  port=$(free_port)
  bg "$WORK/same.out" "$WORK/same.err" "$MS" controller --kubeconfig "$RESTRICTED" --prometheus-url "$PROMETHEUS_URL" \
    --namespace "$ns" --dry-run --metrics-bind-address "127.0.0.1:$port" --health-probe-bind-address "127.0.0.1:$port"
  local pid=$LAST_PID ready="" metrics=""
  sleep 3
  if kill -0 "$pid" 2>/dev/null; then
    ready="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$port/readyz")"
    metrics="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$port/metrics")"
    stop_pid "$pid"
    if [[ "$ready" == 200 && "$metrics" == 200 ]]; then ok "one address for metrics and health: both served"
    else fail "one address for --metrics-bind-address and --health-probe-bind-address: runs, but /readyz answers $ready and /metrics $metrics (want a refusal, or both served)"; fi
  else
    stop_pid "$pid"
    ok "one address for metrics and health: refused (exit $STOP_RC: $(tail -n 1 "$WORK/same.err" | cut -c1-120))"
  fi
}

test_invalid() {
  new_ns invalid || { fail "invalid: namespace"; return; }
  local ns="$NS"
  refused "$ns" "minReplicas above maxReplicas" "minReplicas must be less than or equal to maxReplicas" <<YAML
$(mas_to bad1 apps/v1 Deployment x | sed 's/maxReplicas: 10/maxReplicas: 2\n  minReplicas: 5/')
YAML
  refused "$ns" "duplicate metric names" "metric names must be unique" <<YAML
$(mas_to bad2 apps/v1 Deployment x)
  - name: load
    type: Prometheus
    prometheus: {query: 'up'}
    target: {type: Value, value: "1"}
YAML
  refused "$ns" "a Prometheus metric without its query" "exactly the source block of its type" <<YAML
$(mas_to bad3 apps/v1 Deployment x | sed '/prometheus: {query/d')
YAML
  refused "$ns" "maxReplicas 0" "maxReplicas" <<YAML
$(mas_to bad4 apps/v1 Deployment x | sed 's/maxReplicas: 10/maxReplicas: 0/')
YAML

  bad_flags "$ns"

  deployment "$ns" good 2
  series_set test_load "$ns" good 50
  series_set test_load "$ns" nope 40
  publish
  { mas_to ghost apps/v1 Deployment nope; echo ---; mas_to gizmo example.com/v1 Gizmo g1; echo ---; mas_to good apps/v1 Deployment good; } | mas_apply "$ns" ||
    { fail "invalid: valid objects refused"; return; }
  prom_wait "test_load{namespace=\"$ns\",workload=\"nope\"} == 40" 15
  ctl_start live "$RESTRICTED" --namespace "$ns" --sync-period 1s ||
    { fail "invalid: the live controller never got ready"; return; }

  if wait_for 20 is_replicas "$ns" good 5; then ok "good scales 2 -> 5 beside the broken objects"
  else fail "good: replicas $(replicas "$ns" good), reason $(mas_reason "$ns" good)"; fi
  local m
  for m in ghost gizmo; do
    if wait_for 15 cond_is "$ns" "$m" AbleToScale False; then ok "$m: condition AbleToScale False ($(mas_cond "$ns" "$m" AbleToScale))"
    else fail "$m: condition AbleToScale: want False, got '$(mas_cond "$ns" "$m" AbleToScale)' (status: $(mas_status_json "$ns" "$m" | cut -c1-200))"; fi
    if wait_for 10 has_event "$ns" "$m" '^Warning '; then ok "$m: Warning event ($EVENT_SEEN)"
    else fail "$m: no Warning event (events: $(events_for "$ns" "$m" | tr '\n' ';'))"; fi
  done
  if kill -0 "${CTL_PID[live]}" 2>/dev/null; then ok "the controller keeps running"; else fail "the controller exited"; fi

  # The missing target appears: ghost starts working on its own.
  deployment "$ns" nope 2
  if wait_for 20 is_replicas "$ns" nope 4 && wait_for 5 cond_is "$ns" ghost AbleToScale True; then
    ok "once its target exists ghost scales it (2 -> 4) and AbleToScale turns True"
  else
    fail "after creating its target: ghost replicas $(replicas "$ns" nope), AbleToScale '$(mas_cond "$ns" ghost AbleToScale)'"
  fi

  # Deleting a MeshAutoscaler ends its scaling and its series.
  k delete -n "$ns" mas good >/dev/null
  sleep 1
  set_and_wait test_load "$ns" good 80
  if hold 4 "$ns" good 5; then ok "good deleted: its Deployment is left alone (load asks 8, stays 5)"
  else fail "good deleted, yet its Deployment moved: $HOLD_SEEN"; fi
  local mtx
  mtx="$(ctl_metrics live | grep -v '^#')"
  if ! grep -qE '^meshscaler_(desired|current)_replicas\{.*name="good"' <<<"$mtx"; then ok "good deleted: its replica gauges left /metrics"
  else fail "good deleted: /metrics still has $(grep -E '^meshscaler_(desired|current)_replicas\{.*name="good"' <<<"$mtx" | tr '\n' ';')"; fi
  # Per-object series that outlive their object grow without bound as objects
  # come and go ("objects that are deleted free everything").
  if ! grep -q 'name="good"' <<<"$mtx"; then ok "good deleted: no /metrics series names it any more"
  else fail "good deleted: per-object series outlive it: $(grep 'name="good"' <<<"$mtx" | tr '\n' ';')"; fi
  ctl_stop live
}
