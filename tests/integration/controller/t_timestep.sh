# t_timestep.sh - test 8: the wall clock steps, the controller keeps time.
# The engine, its windows and every schedule run on the monotonic clock; the
# wall clock only dates what users see. A live controller runs under
# libfaketime (Debian package faketime) with only its wall clock faked
# (FAKETIME_DONT_FAKE_MONOTONIC=1), through a file the test rewrites
# (FAKETIME_TIMESTAMP_FILE, with FAKETIME_NO_CACHE=1 read at every call).
#
# Deployment ts (MeshAutoscaler ts: scale-up window 0 and tolerance 0, so
# each step of the load is a scale write, at most 2 Pods per 1 s, a rate
# the load never needs but one that binds an engine whose clock stops or runs
# behind its scale events; scale-down window TS_WINDOW s and 100 % per 1 s)
# under a load rising by one replica's worth every 1.5 s:
#   1. wall clock +TS_SKEW s: it scales up; lastScaleTime is the faked time;
#   2. the wall clock steps back TS_SKEW s: the scale-ups go on, step after
#      step (an engine time held from going back would stop them for TS_SKEW
#      s); lastScaleTime and lastDecision.time are the real time;
#   3. the load drops: the scale-down window holds TS_WINDOW s, then ends
#      (windows on the wall clock would keep the recommendations stamped
#      before the step TS_SKEW s longer);
#   4. up again; the load drops and the wall clock steps forward TS_SKEW s:
#      the window still holds its TS_WINDOW s (on the wall clock it would
#      end at once); lastScaleTime is the faked time again.
# /healthz answers 200 throughout. The timing judge is the API server's audit
# log (its clock is the real one); kubectl polls only give the figures.
#
# TS_SKEW is 4 minutes, not hours: the controller asks Prometheus for the
# instant of its own wall clock (the query's `time`) and Prometheus looks
# back 5 minutes for a sample, so a controller more than 5 minutes ahead of
# Prometheus reads empty vectors. Starting ahead and stepping back to the
# real time keeps the faked clock after the TLS certificates' notBefore
# (e2e/local makes them at `up`).
#
# A Sanitize binary works too: the wrapper preloads its ASan runtime before
# libfaketime (ASan refuses to come second).

TS_FAKETIME_LIB=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
TS_SKEW=240
TS_WINDOW=20

ts_fixture() { # NS
  k apply -n "$1" -f - >/dev/null <<YAML
apiVersion: autoscaling.meshscaler.io/v1alpha1
kind: MeshAutoscaler
metadata: {name: ts}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: ts}
  minReplicas: 1
  maxReplicas: 100
  metrics:
  - name: load
    type: Prometheus
    prometheus: {query: 'sum(test_load{namespace="{{namespace}}",workload="{{name}}"})'}
    target: {type: AverageValue, averageValue: "10"}
  behavior:
    scaleUp:
      stabilizationWindowSeconds: 0
      tolerance: "0"
      policies: [{type: Pods, value: 2, periodSeconds: 1}]
    scaleDown:
      stabilizationWindowSeconds: $TS_WINDOW
      policies: [{type: Percent, value: 100, periodSeconds: 1}]
YAML
}

# ts_wrapper : $WORK/ms-faketime runs $MS with the wall clock of
# $WORK/faketime.rc (ASan's runtime first when $MS links it).
ts_wrapper() {
  local asan
  asan="$(ldd "$MS" 2>/dev/null | awk '$1 ~ /^libasan\.so/ {print $3; exit}')"
  cat >"$WORK/ms-faketime" <<SH
#!/bin/sh
LD_PRELOAD="${asan:+$asan:}$TS_FAKETIME_LIB" FAKETIME_TIMESTAMP_FILE="$WORK/faketime.rc" \\
  FAKETIME_NO_CACHE=1 FAKETIME_DONT_FAKE_MONOTONIC=1 exec "$MS" "\$@"
SH
  chmod +x "$WORK/ms-faketime"
}

# ts_wall OFFSET : the controller's wall clock is real time + OFFSET s from
# now on (a rename: libfaketime reads the file at every clock call).
ts_wall() {
  echo "+$1" >"$WORK/faketime.rc.tmp"
  mv -f "$WORK/faketime.rc.tmp" "$WORK/faketime.rc"
}

# ts_riser NS START : load 10 * (START + i) every 1.5 s.
ts_riser() {
  local i=0
  while :; do
    series_set test_load "$1" ts $(((${2} + i) * 10))
    publish
    i=$((i + 1))
    sleep 1.5
  done
}

# ts_follow NS SECONDS UNTIL : replicas of ts from now, one entry of FOLLOW
# per change seen ("SECONDS REPLICAS"), until UNTIL replicas or SECONDS.
ts_follow() {
  local t0 r last
  t0=$(now)
  last="$(replicas "$1" ts)"
  FOLLOW=("0.0 $last")
  while ! fle "$2" "$(elapsed "$t0")"; do
    r="$(replicas "$1" ts)"
    if [[ -n "$r" && "$r" != "$last" ]]; then
      FOLLOW+=("$(elapsed "$t0") $r")
      last="$r"
    fi
    [[ -n "$r" && "$r" -ge "$3" ]] && return 0
    sleep 0.15
  done
  return 1
}

# ts_writes NS SINCE [UNTIL] : the scale writes to Deployment ts between two
# unix times as the API server's audit log dates them: seconds after SINCE,
# one a line.
ts_writes() {
  sleep 1 # (the audit line follows the response)
  python3 - "$MESHSCALER_E2E_STATE/logs/audit.log" "$1" "$2" "${3:-1e12}" <<'PY'
import json, sys
from datetime import datetime, timezone
path, ns, since, until = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
def ts(s):
    a, _, b = s.rstrip("Z").partition(".")
    t = datetime.strptime(a, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
    return t + (float("0." + b) if b else 0.0)
for line in open(path):
    try:
        ev = json.loads(line)
    except ValueError:
        continue
    ref = ev.get("objectRef", {})
    if (ev.get("stage") == "ResponseComplete" and ref.get("namespace") == ns and ref.get("name") == "ts"
            and ref.get("resource") == "deployments" and ref.get("subresource") == "scale"
            and ev.get("verb") in ("update", "patch")
            and 200 <= ev.get("responseStatus", {}).get("code", 0) < 300):
        t = ts(ev["requestReceivedTimestamp"])
        if since < t <= until:
            print("%.1f" % (t - since))
PY
}

# ts_gaps SPAN WRITES... : TS_GAP, the longest wait in a span of SPAN s
# with scale writes at WRITES (s): from its start to the first, between two,
# from the last to its end; TS_GAPS says it in words.
ts_gaps() {
  local span="$1" n f
  shift
  read -r n f TS_GAP <<<"$(printf '%s\n' "$@" | awk -v span="$span" '
    NF {n++; if (n == 1) f = $1; if ($1 - p > g) g = $1 - p; p = $1}
    END {if (span - p > g) g = span - p; printf "%d %.1f %.1f\n", n, (n ? f : -1), g}')"
  TS_GAPS="$n scale writes in $span s, the first after $f s, at most $TS_GAP s apart"
}

# ts_span NS FROM TO : ts_gaps over the scale writes between two unix times.
ts_span() {
  local w
  mapfile -t w < <(ts_writes "$1" "$2" "$3")
  ts_gaps "$(python3 -c 'import sys; print("%.1f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$2" "$3")" "${w[@]}"
}

# ts_clock_near NS FIELD WANT : the status time at FIELD (jsonpath) is WANT
# s from the real clock, within 15 s; the offset seen in TS_OFF.
ts_clock_near() {
  local t
  TS_OFF=
  t="$(jget "$1" mas ts "$2")"
  [[ -n "$t" ]] || return 1
  TS_OFF="$(python3 -c 'import sys, time
from datetime import datetime, timezone
t = datetime.strptime(sys.argv[1][:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
print("%.0f" % (t - time.time()))' "$t")"
  ((TS_OFF - $3 <= 15 && $3 - TS_OFF <= 15))
}

# ts_clock_check NS FIELD WANT WHAT : ts_clock_near, given 10 s (the status
# is written after the scale).
ts_clock_check() {
  local field="${2//[\{\}]/}"
  if wait_for 10 ts_clock_near "$1" "$2" "$3"; then ok "$4: ${field#.} is $TS_OFF s from the real clock"
  else fail "timestep: $4: ${field#.} is ${TS_OFF:-missing} s from the real clock, want about $3"; fi
}

# ts_settle NS : the riser's last step applied (replicas still for 2 s).
ts_settle() {
  local i
  sleep 2
  for i in 1 2 3 4 5; do hold 2 "$1" ts "$(replicas "$1" ts)" && return 0; done
  return 1
}

# ts_window NS WHAT : the load dropped at PUBLISHED_AT to one replica's
# worth. The first scale write after the drop comes TS_WINDOW - 3 to
# TS_WINDOW + 15 s after it and leaves 1 replica.
ts_window() {
  local ns="$1" what="$2" drop="$PUBLISHED_AT" r first
  r="$(replicas "$ns" ts)"
  wait_for $((TS_WINDOW + 20)) is_replicas "$ns" ts 1
  first="$(ts_writes "$ns" "$drop" | head -n 1)"
  if [[ -z "$first" ]]; then
    fail "timestep: $what: no scale write $(elapsed "$drop") s after the drop (window $TS_WINDOW s; replicas $(replicas "$ns" ts), reason $(mas_reason "$ns" ts))"
  elif fle "$((TS_WINDOW - 3))" "$first" && fle "$first" "$((TS_WINDOW + 15))" && is_replicas "$ns" ts 1; then
    ok "$what: the $TS_WINDOW s scale-down window held $r replicas, then $r -> 1 at $first s after the drop"
    TS_DOWN+=("$what: $r -> 1 at $first s")
  else
    fail "timestep: $what: the first scale write came $first s after the drop (window $TS_WINDOW s), replicas now $(replicas "$ns" ts) (from $r; reason $(mas_reason "$ns" ts), desired $(mas_desired "$ns" ts))"
  fi
}

ts_healthy() { curl -sf -o /dev/null --max-time 2 "http://127.0.0.1:${CTL_HEALTH[ts]}/healthz"; }

test_timestep() {
  if [[ ! -e "$TS_FAKETIME_LIB" ]]; then
    fail "timestep: no $TS_FAKETIME_LIB (Debian package faketime: scripts/install-deps.sh build)"
    return
  fi
  if [[ ! -f "$MESHSCALER_E2E_STATE/logs/audit.log" ]]; then
    fail "timestep: no audit log in $MESHSCALER_E2E_STATE/logs (e2e/local writes it)"
    return
  fi
  new_ns timestep || { fail "timestep: namespace"; return; }
  local ns="$NS" r0 riser t_rise t_step t_end
  TS_DOWN=()
  deployment "$ns" ts 2
  set_and_wait test_load "$ns" ts 20 || fail "timestep: series not in Prometheus"
  ts_fixture "$ns"

  ts_wrapper
  ts_wall "$TS_SKEW"
  local MS="$WORK/ms-faketime" # what ctl_start runs
  ctl_start ts "$RESTRICTED" --namespace "$ns" --sync-period 1s ||
    { fail "timestep: the controller never got ready under libfaketime"; return; }

  # 1. Ahead by TS_SKEW: rising load, scale-ups.
  t_rise=$(now)
  ts_riser "$ns" 3 >/dev/null 2>&1 &
  riser=$!
  E2E_PIDS+=("$riser")
  if ts_follow "$ns" 40 8; then
    ok "wall clock +$TS_SKEW s: scales up under rising load (seen: ${FOLLOW[*]})"
  else
    fail "timestep: wall clock +$TS_SKEW s: no scale-up to 8 (seen: ${FOLLOW[*]}; reason $(mas_reason "$ns" ts): $(jget "$ns" mas ts '{.status.lastDecision.message}' | cut -c1-200))"
  fi
  ts_clock_check "$ns" '{.status.lastScaleTime}' "$TS_SKEW" "wall clock +$TS_SKEW s (libfaketime works)"

  # 2. Back by TS_SKEW while the load keeps rising.
  r0="$(replicas "$ns" ts)"
  t_step=$(now)
  ts_wall 0
  ts_follow "$ns" 40 $((r0 + 8))
  t_end=$(now)
  ts_span "$ns" "$t_rise" "$t_step"
  TS_BEFORE="$TS_GAPS"
  ts_span "$ns" "$t_step" "$t_end"
  TS_AFTER="$TS_GAPS"
  # (12 s: a busy machine's worst; a held engine clock waits TS_SKEW s)
  if [[ "$(replicas "$ns" ts)" -ge $((r0 + 8)) ]] && fle "$TS_GAP" 12; then
    ok "wall clock stepped back $TS_SKEW s: scale-ups go on, $r0 -> $(replicas "$ns" ts) ($TS_AFTER; seen: ${FOLLOW[*]})"
  else
    fail "timestep: after the step back: $r0 -> $(replicas "$ns" ts) in $(elapsed "$t_step") s, $TS_AFTER (reason $(mas_reason "$ns" ts))"
  fi
  ts_clock_check "$ns" '{.status.lastScaleTime}' 0 "stepped back"
  ts_clock_check "$ns" '{.status.lastDecision.time}' 0 "stepped back"
  kill "$riser" 2>/dev/null
  wait "$riser" 2>/dev/null
  ts_settle "$ns"

  # 3. The load drops: a window of TS_WINDOW s on the monotonic clock, not
  # TS_SKEW s more for the recommendations stamped before the step.
  set_and_wait test_load "$ns" ts 10 || fail "timestep: load 10 not in Prometheus"
  ts_window "$ns" "after the step back"

  # 4. Up again; the load drops and the wall clock steps forward TS_SKEW s.
  set_and_wait test_load "$ns" ts 80 || fail "timestep: load 80 not in Prometheus"
  wait_for 20 is_replicas "$ns" ts 8 || fail "timestep: load 80 gives $(replicas "$ns" ts) replicas, want 8"
  series_set test_load "$ns" ts 10
  publish
  ts_wall "$TS_SKEW"
  prom_wait "test_load{namespace=\"$ns\",workload=\"ts\"} == 10" 15 || fail "timestep: load 10 not in Prometheus"
  ts_window "$ns" "wall clock stepped forward $TS_SKEW s"
  ts_clock_check "$ns" '{.status.lastScaleTime}' "$TS_SKEW" "stepped forward"

  if ts_healthy; then ok "/healthz answers 200 after both steps"
  else fail "timestep: /healthz fails after the steps"; fi
  note "scale writes (audit log) before the step back: $TS_BEFORE"
  note "scale writes (audit log) after the step back: $TS_AFTER"
  note "scale-down: ${TS_DOWN[*]}"
  ctl_stop ts
}
