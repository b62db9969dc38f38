# t_scaling.sh - test 1: a live controller scales Deployments by the engine's
# rules from metrics that travel through the real Prometheus.
#
# Deployment web (MeshAutoscaler web: min 1, max 10, load/10 per replica,
# scale-up Pods 3 per 4 s, scale-down window 10 s, a downstream guardrail,
# fallback 9 after 3 failures) and Deployment api (no fallback, scale-down
# window 0, so a missing metric read as zero would shrink it at once).

# mas_apply NS : apply the YAML on stdin in NS.
mas_apply() { k apply -n "$1" -f - >/dev/null; }

# load_metric : the metric every test uses; asks ceil(load / 10) replicas.
load_metric() {
  cat <<'YAML'
  metrics:
  - name: load
    type: Prometheus
    prometheus: {query: 'sum(test_load{namespace="{{namespace}}",workload="{{name}}"})'}
    target: {type: AverageValue, averageValue: "10"}
YAML
}

# trace NS DEPLOY MAS UNTIL_REPLICAS SECONDS : follow replicas (and the
# MeshAutoscaler's lastDecision.reason) until UNTIL_REPLICAS or the deadline.
# Each change is one entry of TRACE ("SECONDS_SINCE_START REPLICAS"), REASONS
# collects every reason seen.
trace() {
  local ns="$1" d="$2" m="$3" until="$4" secs="$5" from="${6:-}" t0 r last="" reason
  t0=$(now)
  TRACE=()
  # FROM: the count before the change that starts the trace. A 1 s sync can
  # scale before the first poll here on a busy machine; that step still counts.
  if [[ -n "$from" ]]; then TRACE+=("0.0 $from"); last="$from"; fi
  REASONS=" "
  while :; do
    r="$(replicas "$ns" "$d")"
    reason="$(mas_reason "$ns" "$m")"
    [[ "$REASONS" == *" $reason "* ]] || REASONS+="$reason "
    if [[ -n "$r" && "$r" != "$last" ]]; then
      TRACE+=("$(elapsed "$t0") $r")
      last="$r"
    fi
    [[ "$r" == "$until" ]] && return 0
    fle "$secs" "$(elapsed "$t0")" && return 1
    sleep 0.15
  done
}

test_scaling() {
  new_ns scale || { fail "scaling: namespace"; return; }
  local ns="$NS"
  deployment "$ns" web 2
  deployment "$ns" api 4
  series_set test_load "$ns" web 20
  series_set test_load "$ns" api 40
  series_set test_db_usage "$ns" web 0
  series_set test_db_limit "$ns" web 1000
  publish
  prom_wait "test_db_limit{namespace=\"$ns\"} == 1000" 15 || { fail "scaling: series not in Prometheus"; return; }

  mas_apply "$ns" <<YAML
apiVersion: autoscaling.meshscaler.io/v1alpha1
kind: MeshAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 10
$(load_metric)
  behavior:
    scaleUp: {stabilizationWindowSeconds: 0, selectPolicy: Max, policies: [{type: Pods, value: 3, periodSeconds: 4}]}
    scaleDown: {stabilizationWindowSeconds: 10, policies: [{type: Percent, value: 100, periodSeconds: 1}]}
  guardrails:
    downstream:
    - name: db
      usageQuery: 'sum(test_db_usage{namespace="$ns",workload="web"})'
      limitQuery: 'sum(test_db_limit{namespace="$ns",workload="web"})'
      perReplica: 10
      maxUtilization: 0.7
  fallback: {failureThreshold: 3, replicas: 9}
---
apiVersion: autoscaling.meshscaler.io/v1alpha1
kind: MeshAutoscaler
metadata: {name: api}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: api}
  minReplicas: 1
  maxReplicas: 10
$(load_metric)
  behavior:
    scaleUp: {stabilizationWindowSeconds: 0, policies: [{type: Pods, value: 3, periodSeconds: 4}]}
    scaleDown: {stabilizationWindowSeconds: 0, policies: [{type: Percent, value: 100, periodSeconds: 1}]}
YAML
  ctl_start live "$RESTRICTED" --namespace "$ns" --sync-period 1s ||
    { fail "scaling: the live controller never got ready"; return; }

  # --- steady state: decisions recorded, nothing moves
  if wait_for 20 has_decision "$ns" web && wait_for 10 has_decision "$ns" api; then
    ok "status.lastDecision written for both objects (web: $(mas_reason "$ns" web), api: $(mas_reason "$ns" api))"
  else
    fail "no status.lastDecision after 20 s (web status: $(mas_status_json "$ns" web | cut -c1-300))"
  fi
  local v
  v="$(jget "$ns" mas web '{.status.currentMetrics[?(@.name=="load")].value}')"
  if [[ "$v" == 20 || "$v" == 20.0 ]]; then ok "status.currentMetrics[load].value is 20, read through Prometheus"
  else fail "status.currentMetrics[load].value: want 20, got '$v'"; fi
  local og g ref
  og="$(jget "$ns" mas web '{.status.observedGeneration}')"
  g="$(jget "$ns" mas web '{.metadata.generation}')"
  if [[ -n "$og" && "$og" == "$g" ]]; then ok "status.observedGeneration = metadata.generation ($g)"
  else fail "status.observedGeneration '$og', metadata.generation '$g'"; fi
  ref="$(jget "$ns" mas web '{.status.reference}')"
  if [[ "$ref" == Deployment/web ]]; then ok "status.reference Deployment/web (the REFERENCE column)"
  else fail "status.reference: want Deployment/web, got '$ref'"; fi
  if hold 3 "$ns" web 2 && is_replicas "$ns" api 4; then ok "at target load nothing scales (web 2, api 4)"
  else fail "at target load: web $(replicas "$ns" web), api $(replicas "$ns" api) ($HOLD_SEEN)"; fi

  # --- scale-up, rate-limited to +3 per 4 s, capped at maxReplicas 10
  set_and_wait test_load "$ns" web 150 || fail "load 150 not in Prometheus"
  if trace "$ns" web web 10 40 2; then ok "scale-up reaches maxReplicas 10 (trace: ${TRACE[*]})"
  else fail "scale-up: never reached 10 in 40 s (trace: ${TRACE[*]}; reasons:$REASONS)"; fi
  local steps="" e
  for e in "${TRACE[@]}"; do steps+="${e#* } "; done
  if [[ "$steps" == "2 5 8 10 " ]]; then ok "scale-up by the Pods 3 / 4 s policy: 2 -> 5 -> 8 -> 10"
  else fail "scale-up steps: want '2 5 8 10', got '$steps' (reasons:$REASONS)"; fi
  if [[ "$REASONS" == *" ScaleUpLimit "* ]]; then ok "reason ScaleUpLimit while rate-limited"
  else fail "reason ScaleUpLimit never seen (reasons:$REASONS)"; fi
  local prev="" gap_ok=1 t
  for e in "${TRACE[@]:1}"; do
    t="${e% *}"
    if [[ -n "$prev" ]] && ! fle 3.0 "$(python3 -c "print($t-$prev)")"; then gap_ok=0; fi
    prev="$t"
  done
  # The engine's clock is read when a sync starts, the write lands a little
  # later and this poll sees it later still: 4 s apart in the engine can look
  # like 3.4 s here; a 1 s tick ignoring the period would show about 1 s.
  if ((gap_ok)); then ok "successive scale-ups at least 3 s apart (period 4 s)"
  else fail "two scale-ups closer than 3 s: ${TRACE[*]}"; fi
  if hold 3 "$ns" web 10 && wait_for 3 is_reason "$ns" web TooManyReplicas; then
    ok "held at maxReplicas 10 with reason TooManyReplicas"
  else
    fail "at the cap: replicas $(replicas "$ns" web), reason $(mas_reason "$ns" web) ($HOLD_SEEN)"
  fi
  local mtx
  mtx="$(ctl_metrics live)"
  if grep -qE "^meshscaler_desired_replicas\{[^}]*name=\"web\"[^}]*\} 10(\.0)?$" <<<"$mtx" &&
     grep -qE "^meshscaler_current_replicas\{[^}]*name=\"web\"[^}]*\} 10(\.0)?$" <<<"$mtx"; then
    ok "/metrics: desired and current replicas of web are 10"
  else
    fail "/metrics for web: $(grep -E '^meshscaler_(desired|current)_replicas' <<<"$mtx" | grep '"web"' | tr '\n' ';')"
  fi
  if has_event "$ns" web '^Normal '; then ok "a Normal event on scale: $EVENT_SEEN"
  else fail "no Normal event about MeshAutoscaler web after scaling (events: $(events_for "$ns" web | tr '\n' ';'))"; fi

  # --- stabilised scale-down: nothing for 10 s, then down to 3. The
  # controller restarts as the load drops: its new memory starts with the
  # current 10 as a recommendation (docs/decision-rules.md step 0), so the restart must not
  # shorten the window either.
  series_set test_load "$ns" web 30
  publish
  local t_pub=$PUBLISHED_AT
  ctl_stop live
  ctl_start live "$RESTRICTED" --namespace "$ns" --sync-period 1s ||
    { fail "scaling: the restarted controller never got ready"; return; }
  if hold 8.5 "$ns" web 10; then ok "no scale-down within the 10 s stabilization window, across a controller restart"
  else fail "scale-down inside the stabilization window: $HOLD_SEEN after the restart"; fi
  if wait_for 20 is_replicas "$ns" web 3; then ok "scale-down to 3 after the window ($(elapsed "$t_pub") s after the metric changed)"
  else fail "no scale-down to 3 within 28 s (replicas $(replicas "$ns" web), reason $(mas_reason "$ns" web))"; fi

  # --- the downstream guardrail holds the scale-out: (0.7*200 - 140)/10 = 0 more
  series_set test_db_limit "$ns" web 200
  set_and_wait test_db_usage "$ns" web 140 || fail "guardrail series not in Prometheus"
  set_and_wait test_load "$ns" web 150
  if wait_for 10 is_reason "$ns" web DownstreamLimit; then ok "reason DownstreamLimit when the downstream is full"
  else fail "reason with a full downstream: want DownstreamLimit, got $(mas_reason "$ns" web)"; fi
  if hold 5 "$ns" web 3; then ok "the guardrail holds web at 3 although load asks 15"
  else fail "the guardrail did not hold: $HOLD_SEEN"; fi
  local msg
  msg="$(jget "$ns" mas web '{.status.lastDecision.message}')"
  if [[ "$msg" == *db* && "$msg" == *load* ]]; then ok "lastDecision.message explains it: \"$(cut -c1-160 <<<"$msg")...\""
  else fail "lastDecision.message should name the metric load and the downstream db: '$msg'"; fi
  if cond_is "$ns" web DownstreamLimited True; then ok "condition DownstreamLimited True"
  else fail "condition DownstreamLimited: '$(mas_cond "$ns" web DownstreamLimited)'"; fi
  set_and_wait test_load "$ns" web 60
  set_and_wait test_db_usage "$ns" web 0
  if wait_for 15 is_replicas "$ns" web 6; then ok "the guardrail released: scale-out to 6"
  else fail "after the guardrail released: replicas $(replicas "$ns" web), reason $(mas_reason "$ns" web)"; fi

  # --- Prometheus stopped: web falls back to 9, api holds 4
  wait_for 10 is_reason "$ns" web DesiredWithinRange
  is_replicas "$ns" api 4 || fail "api moved before the outage: $(replicas "$ns" api)"
  if ! prom_stop; then fail "could not stop Prometheus"; return; fi
  local t_stop
  t_stop=$(now)
  local api_held=1 web_fell=0 api_seen="" r fell_after
  while ! fle 25 "$(elapsed "$t_stop")"; do
    r="$(replicas "$ns" api)"
    [[ -z "$r" || "$r" == 4 ]] || { api_held=0; api_seen="$r after $(elapsed "$t_stop") s"; }
    if [[ $web_fell == 0 && "$(replicas "$ns" web)" == 9 ]]; then
      web_fell=1
      fell_after="$(elapsed "$t_stop")"
      ok "Prometheus down: web scaled to fallback.replicas 9 after $fell_after s"
      # failureThreshold 3 at 1 s: the third failing sync is 2 s after the first
      if fle 1.5 "$fell_after"; then ok "the fallback waited for failureThreshold (3) failed syncs"
      else fail "the fallback came $fell_after s after Prometheus stopped: before 3 failed syncs at 1 s"; fi
      t_stop=$(python3 -c "import time; print(time.time()-19)") # then watch api 6 s more
    fi
    sleep 0.2
  done
  ((web_fell)) || fail "Prometheus down: web never reached fallback 9 in 25 s (replicas $(replicas "$ns" web), reason $(mas_reason "$ns" web))"
  if is_reason "$ns" web Fallback; then ok "web's reason during the outage: $(mas_reason "$ns" web)"
  else fail "web's reason during the outage: want Fallback, got $(mas_reason "$ns" web)"; fi
  if ((api_held)); then ok "Prometheus down: api without fallback holds 4 (no scale-down on missing data)"
  else fail "Prometheus down: api moved to $api_seen"; fi
  if is_reason "$ns" api MetricsUnavailable; then ok "api's reason during the outage: MetricsUnavailable"
  else fail "api's reason during the outage: want MetricsUnavailable, got $(mas_reason "$ns" api)"; fi

  # --- Prometheus back: scaling follows the metrics again
  if prom_restart; then ok "Prometheus restarted"; else fail "Prometheus did not come back"; return; fi
  prom_wait "up{target=\"$EXPORTER_TARGET\"} == 1" 30
  set_and_wait test_load "$ns" api 70
  if wait_for 15 is_replicas "$ns" api 7; then ok "after the outage api follows the metric again (4 -> 7)"
  else fail "after the outage api: replicas $(replicas "$ns" api), reason $(mas_reason "$ns" api)"; fi
  if wait_for 20 is_replicas "$ns" web 6; then ok "after the outage web returns from the fallback to 6"
  else fail "after the outage web: replicas $(replicas "$ns" web), reason $(mas_reason "$ns" web)"; fi
  ctl_stop live
}
