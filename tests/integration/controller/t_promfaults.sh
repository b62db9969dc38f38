# t_promfaults.sh - test 9: bounded Prometheus ticks (the issue's "Bounded
# Prometheus ticks") against the real Prometheus of e2e/local, reached
# through the fault proxy (tests/tools/faultproxy.py), which black-holes,
# resets, answers 429/503 or trickles on command.
#
# Controller pf (--sync-period 2s, --prometheus-round-timeout 2s) reads
# Prometheus through the proxy for two objects free to scale either way at
# once: hold (no fallback) and fb (fallback 1 replica, mode CurrentIfHigher).
# A dry-run twin, pfd, reads the same objects through the same proxy: its
# JSON lines say why a value is missing (the status only says "1 of 1
# metrics missing"). Each fault moves the load; through the fault the
# replicas never go down, and after `pass` a real decision shows as a scale
# to the new load (the time it takes is printed).
#   blackhole  every round ends by its deadline (the round histogram of
#              /metrics, the tick's seconds in the debug log); hold
#              MetricsUnavailable, fb on its fallback
#   reset      the circuit breaker opens: its log line, the twin's "missing"
#              text, meshscaler_prometheus_breaker_open 1 and
#              meshscaler_prometheus_queries_skipped_total growing on
#              /metrics; the gauge is 0 again after recovery
#   status 429 and 503 with Retry-After, trickle at 20 bytes/s (an answer is
#              ~230 bytes: past the deadline): bounded, MetricsUnavailable
#              with a readable message, no crash, recovery
#   blackhole again, then SIGTERM to pf with its queries in flight: exit 0
#              within 5 s; the hung tick ends for the shutdown, long before
#              its deadline (debug log); pfd's SIGTERM in pass mode for scale
# Then answers of 30 MiB from the real Prometheus without stored data (one
# sample with a 30 MiB label, see pf_big_query) for 16 objects, in dry-run
# controllers: refused at the default 1 MiB cap; with the cap raised to 64Mi
# read until the round's 64Mi budget, the rest refused; the peak RSS of each.
# Last, --user-queries=namespaced and deny beside a preset-based object (the
# HAProxy preset, its series published by the exporter).
#
# Figures, printed again at the end: the longest tick with a black-holed
# Prometheus, SIGTERM to exit, time to recover after the breaker, peak RSS.

PF_FIGURES=()
PF_LOAD_QUERY='sum(test_load{namespace="{{namespace}}",workload="{{name}}"})'
PF_DEADLINE=2      # --prometheus-round-timeout of pf, seconds
PF_SLACK=1.5       # a round may end this much after its deadline
PF_EXIT_BOUND=5    # seconds from SIGTERM to exit with Prometheus hung
PF_RSS_BOUND=200   # MiB, peak RSS with 16 answers of 30 MiB (Sanitize build)
PF_BIG_OBJECTS=16

# --- the fault proxy ---------------------------------------------------------------

# pf_proxy_start : the fault proxy in front of Prometheus; PF_URL is the
# URL controllers get, PF_CONTROL its control port.
pf_proxy_start() {
  local out="$WORK/pf-proxy.out" up line i
  up="${PROMETHEUS_URL#http://}"
  up="${up%%/*}"
  bg "$out" "$WORK/pf-proxy.err" python3 "$root/tests/tools/faultproxy.py" --listen 127.0.0.1:0 \
    --upstream "$up" --control 127.0.0.1:0 --log "$WORK/pf-proxy.log"
  PF_PROXY_PID=$LAST_PID
  for i in $(seq 1 50); do [[ -s "$out" ]] && break; sleep 0.1; done
  line="$(head -n 1 "$out")"
  PF_PORT="$(sed -n 's/.*LISTEN=\([0-9]*\).*/\1/p' <<<"$line")"
  PF_CONTROL="$(sed -n 's/.*CONTROL=\([0-9]*\).*/\1/p' <<<"$line")"
  [[ -n "$PF_PORT" && -n "$PF_CONTROL" ]] || return 1
  PF_URL="http://127.0.0.1:$PF_PORT"
}

# pf_mode MODE [ARGS] : e.g. pf_mode status 'code=429&retry_after=5'.
pf_mode() { curl -sf --max-time 2 "http://127.0.0.1:$PF_CONTROL/mode?set=$1${2:+&$2}" >/dev/null; }
# pf_open : connections the proxy holds open now.
pf_open() {
  curl -sf --max-time 2 "http://127.0.0.1:$PF_CONTROL/stats" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["open"])' 2>/dev/null
}
pf_has_open() { [[ "$(pf_open)" -gt 0 ]] 2>/dev/null; }

# pf_ctl_start NAME KUBECONFIG FLAGS... : ctl_start, again (twice at most)
# when a port chosen for an endpoint was taken before the controller bound it:
# the many short connections to Prometheus here make that race likely.
pf_ctl_start() {
  local i
  for i in 1 2 3; do
    ctl_start "$@" && return 0
    grep -q "cannot listen" "${CTL_ERR[$1]}" 2>/dev/null || return 1
    stop_pid "${CTL_PID[$1]}"
    unset "CTL_PID[$1]"
    note "(controller $1: a port was taken meanwhile; starting it again)"
  done
  return 1
}

# --- objects -------------------------------------------------------------------------

# pf_mas NS NAME QUERY [EXTRA] : a MeshAutoscaler for Deployment NAME asking
# ceil(QUERY / 10) replicas, free to scale either way at once; EXTRA is more
# YAML at the level of spec's fields (two spaces in).
pf_mas() {
  k apply -n "$1" -f - >/dev/null <<YAML
apiVersion: autoscaling.meshscaler.io/v1alpha1
kind: MeshAutoscaler
metadata: {name: $2}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: $2}
  minReplicas: 1
  maxReplicas: 20
  metrics:
  - name: load
    type: Prometheus
    prometheus: {query: '$3'}
    target: {type: AverageValue, averageValue: "10"}
  behavior:
    scaleUp: {stabilizationWindowSeconds: 0, policies: [{type: Pods, value: 100, periodSeconds: 1}]}
    scaleDown: {stabilizationWindowSeconds: 0, policies: [{type: Percent, value: 100, periodSeconds: 1}]}
${4:-}
YAML
}

# pf_preset NS NAME : the same shape on the HAProxy preset (in-flight
# sessions of the workload's pods, 10 per replica).
pf_preset() {
  k apply -n "$1" -f - >/dev/null <<YAML
apiVersion: autoscaling.meshscaler.io/v1alpha1
kind: MeshAutoscaler
metadata: {name: $2}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: $2}
  minReplicas: 1
  maxReplicas: 20
  metrics:
  - name: sessions
    type: SidecarConcurrency
    sidecarConcurrency: {proxy: haproxy}
    target: {type: AverageValue, averageValue: "10"}
  behavior:
    scaleUp: {stabilizationWindowSeconds: 0, policies: [{type: Pods, value: 100, periodSeconds: 1}]}
YAML
}

# pf_sessions NS POD VALUE : publish haproxy_server_current_sessions of one
# pod (the preset derives the workload from the pod's name) and wait for it.
pf_sessions() {
  SERIES["haproxy_server_current_sessions{namespace=\"$1\",pod=\"$2\"}"]="$3"
  publish
  prom_wait "haproxy_server_current_sessions{namespace=\"$1\",pod=\"$2\"} == $3" 15
}

pf_cond_msg() { jget "$1" mas "$2" "{.status.conditions[?(@.type==\"$3\")].message}"; }
# pf_valid NS NAME... : every object's ScalingActive is True (metrics read).
pf_valid() {
  local ns="$1" n
  shift
  for n in "$@"; do cond_is "$ns" "$n" ScalingActive True || return 1; done
}
pf_both_replicas() { is_replicas "$1" hold "$2" && is_replicas "$1" fb "$2"; }

# pf_missing OUT NAME : from a dry-run controller's JSON lines, why NAME's
# metric "load" was missing in its last line ("" when it was not).
pf_missing() {
  python3 - "$1" "$2" <<'PY' 2>/dev/null
import json, sys
last = ""
for line in open(sys.argv[1]):
    try:
        ev = json.loads(line)
    except ValueError:
        continue
    if ev.get("name") == sys.argv[2]:
        last = next(iter(ev.get("missing", {}).values()), "")
print(last)
PY
}
# pf_missing_has OUT NAME REGEX : the last line's reason matches REGEX.
pf_missing_has() { [[ "$(pf_missing "$1" "$2")" =~ $3 ]]; }

# --- figures from /metrics and the logs ------------------------------------------------

# pf_snap NAME FILE : controller NAME's /metrics into FILE.
pf_snap() { ctl_metrics "$1" >"$2" 2>/dev/null; }

# pf_hist BEFORE AFTER FAMILY : between two snapshots, "COUNT MEAN MAX_BOUND
# OVER_1S": observations, their mean, the smallest bucket bound holding all
# of them (inf when one passed the largest), and how many took over 1 s.
pf_hist() {
  python3 - "$1" "$2" "$3" <<'PY'
import re, sys
def load(path, fam):
    b, s, c = {}, 0.0, 0.0
    for line in open(path):
        if line.startswith(fam + "_bucket{"):
            le = re.search(r'le="([^"]+)"', line).group(1)
            b[float("inf") if le == "+Inf" else float(le)] = float(line.split()[-1])
        elif line.startswith(fam + "_sum"):
            s = float(line.split()[-1])
        elif line.startswith(fam + "_count"):
            c = float(line.split()[-1])
    return b, s, c
b0, s0, c0 = load(sys.argv[1], sys.argv[3])
b1, s1, c1 = load(sys.argv[2], sys.argv[3])
n = c1 - c0
if n <= 0:
    print("0 0 0 0"); sys.exit()
d = {le: b1[le] - b0.get(le, 0) for le in b1}
top = min(le for le in d if d[le] >= n)
print(f"{int(n)} {(s1 - s0) / n:.2f} {top:g} {int(n - d.get(1.0, 0))}")
PY
}

# pf_ticks ERRFILE SINCE_LINE : the ticks ("round observed" debug lines)
# after line SINCE_LINE of a controller's stderr: "LONGEST COUNT".
pf_ticks() {
  tail -n "+$(($2 + 1))" "$1" | python3 -c '
import json, sys
secs = []
for line in sys.stdin:
    try:
        ev = json.loads(line)
    except ValueError:
        continue
    if ev.get("msg") == "round observed" and "seconds" in ev:
        secs.append(float(ev["seconds"]))
print("%.2f %d" % (max(secs) if secs else 0, len(secs)))'
}

# pf_count ERRFILE SINCE_LINE MSG : log lines with msg MSG after SINCE_LINE.
pf_count() { tail -n "+$(($2 + 1))" "$1" | grep -c "\"msg\":\"$3\""; }

# pf_breaker NAME : controller NAME's meshscaler_prometheus_breaker_open.
pf_breaker() { ctl_metrics "$1" | sed -n 's/^meshscaler_prometheus_breaker_open \([0-9.]*\)$/\1/p'; }
pf_breaker_closed() { [[ "$(pf_breaker "$1")" == 0 ]]; }

# pf_counter FILE NAME : a counter's value in a /metrics snapshot (0 if absent).
pf_counter() { awk -v n="$2" '$1 == n {v = $2} END {print v + 0}' "$1"; }

# pf_watch SECONDS NS MIN : for SECONDS, hold and fb keep at least MIN
# replicas; PF_LOW says what went lower, PF_REASONS the reasons seen,
# PF_BREAKER_SEEN whether pf's /metrics showed the breaker open.
pf_watch() {
  local secs="$1" ns="$2" min="$3" t0 n r
  t0=$(now)
  PF_LOW=
  PF_REASONS=" "
  PF_BREAKER_SEEN=0
  while ! fle "$secs" "$(elapsed "$t0")"; do
    [[ "$(pf_breaker pf)" == 1 ]] && PF_BREAKER_SEEN=1
    for n in hold fb; do
      r="$(replicas "$ns" "$n")"
      [[ -z "$r" || "$r" -ge "$min" || -n "$PF_LOW" ]] || PF_LOW="$n at $r replicas after $(elapsed "$t0") s"
      r="$n=$(mas_reason "$ns" "$n")"
      [[ "$PF_REASONS" == *" $r "* ]] || PF_REASONS+="$r "
    done
    sleep 0.3
  done
  [[ -z "$PF_LOW" ]]
}

# pf_bounded WHAT BEFORE AFTER ERR SINCE : the rounds between two /metrics
# snapshots, and the ticks logged since line SINCE, ended by the deadline
# plus the slack. PF_TICK_MAX: the longest tick.
pf_bounded() {
  local what="$1" n mean top over tmax nt bound
  read -r n mean top over <<<"$(pf_hist "$2" "$3" meshscaler_round_duration_seconds)"
  read -r tmax nt <<<"$(pf_ticks "$4" "$5")"
  PF_TICK_MAX=$tmax
  bound=$(python3 -c "print($PF_DEADLINE + $PF_SLACK)")
  note "$what: $n rounds (mean $mean s, $over over 1 s, all under the ${top} s bucket bound); longest of $nt ticks $tmax s"
  if [[ "$n" -gt 0 && "$top" != inf ]] && fle "$tmax" "$bound" && fle "$mean" "$bound" && fle "$top" 5; then
    ok "$what: every round bounded (longest tick $tmax s; deadline $PF_DEADLINE s + $PF_SLACK s)"
  else
    fail "$what: rounds not bounded by $bound s: $n rounds, mean $mean s, bucket $top, longest tick $tmax s"
  fi
}

# --- 1-4 and 2: faults under controller pf ----------------------------------------------

# pf_fault WHAT NS MODE ARGS LOAD HOLD_MIN SECONDS EXPECT : one fault: the load
# moves to LOAD, the proxy turns MODE for SECONDS (hold and fb stay at least
# HOLD_MIN, the rounds stay bounded, hold is MetricsUnavailable, the twin's
# reason matches the regex EXPECT), then pass: both reach ceil(LOAD / 10) (PF_RECOVERY
# seconds after pass).
pf_fault() {
  local what="$1" ns="$2" mode="$3" args="$4" load="$5" min="$6" secs="$7" expect="$8"
  local err="${CTL_ERR[pf]}" s0="$WORK/pf-$mode-0.prom" s1="$WORK/pf-$mode-1.prom" lines t0 want
  want=$(( (load + 9) / 10 ))
  pf_snap pf "$s0"
  lines=$(wc -l <"$err")
  PF_LINES=$lines
  pf_mode "$mode" "$args" || { fail "$what: the proxy refused mode $mode $args"; return; }
  # Published, not waited for: the fault's length stays what it says, and
  # Prometheus has it long before the fault ends.
  series_set test_load "$ns" hold "$load"
  series_set test_load "$ns" fb "$load"
  publish
  if pf_watch "$secs" "$ns" "$min"; then ok "$what: hold and fb never go below $min replicas in $secs s (reasons seen:$PF_REASONS)"
  else fail "$what: $PF_LOW (reasons seen:$PF_REASONS)"; fi
  pf_snap pf "$s1"
  pf_bounded "$what" "$s0" "$s1" "$err" "$lines"
  if is_reason "$ns" hold MetricsUnavailable && cond_is "$ns" hold ScalingActive "False FailedGetMetrics"; then
    ok "$what: hold MetricsUnavailable, ScalingActive False: \"$(pf_cond_msg "$ns" hold ScalingActive)\""
  else
    fail "$what: hold's reason $(mas_reason "$ns" hold), ScalingActive $(mas_cond "$ns" hold ScalingActive)"
  fi
  if pf_missing_has "${CTL_OUT[pfd]}" hold "$expect"; then ok "$what: why, in the dry-run line: \"$(pf_missing "${CTL_OUT[pfd]}" hold | cut -c1-200)\""
  else fail "$what: the dry-run line should say \"$expect\": \"$(pf_missing "${CTL_OUT[pfd]}" hold | cut -c1-200)\""; fi
  kill -0 "${CTL_PID[pf]}" 2>/dev/null || fail "$what: controller pf died"
  pf_mode pass
  t0=$(now)
  if wait_for 40 pf_both_replicas "$ns" "$want"; then
    PF_RECOVERY=$(elapsed "$t0")
    ok "$what, then pass: real decisions again after $PF_RECOVERY s (hold and fb at $want for load $load)"
  else
    PF_RECOVERY=
    fail "$what, then pass: hold $(replicas "$ns" hold) ($(mas_reason "$ns" hold)), fb $(replicas "$ns" fb) ($(mas_reason "$ns" fb)), want $want, $(elapsed "$t0") s after pass"
  fi
}

pf_faults() {
  new_ns pfault || { fail "promfaults: namespace"; return; }
  local ns="$NS" fb_extra="  fallback: {failureThreshold: 2, replicas: 1}"
  deployment "$ns" hold 4
  deployment "$ns" fb 4
  series_set test_load "$ns" hold 40
  set_and_wait test_load "$ns" fb 40 || { fail "promfaults: series not in Prometheus"; return; }
  pf_mas "$ns" hold "$PF_LOAD_QUERY"
  pf_mas "$ns" fb "$PF_LOAD_QUERY" "$fb_extra"
  local flags=(--namespace "$ns" --sync-period 2s --prometheus-round-timeout "${PF_DEADLINE}s")
  MS_E2E_LOG_LEVEL=debug PROMETHEUS_URL="$PF_URL" pf_ctl_start pf "$RESTRICTED" "${flags[@]}" ||
    { fail "promfaults: controller pf never got ready"; return; }
  PROMETHEUS_URL="$PF_URL" pf_ctl_start pfd "$RESTRICTED" "${flags[@]}" --dry-run --output json ||
    { fail "promfaults: the dry-run twin pfd never got ready"; return; }
  if wait_for 30 pf_valid "$ns" hold fb; then ok "through the proxy (pass): hold and fb read their metric"
  else fail "promfaults: no valid metric through the proxy (hold: $(mas_cond "$ns" hold ScalingActive), fb: $(mas_cond "$ns" fb ScalingActive))"; return; fi

  # --- 1. black-holed: the load falls; missing must not read as zero
  pf_fault "black-holed" "$ns" blackhole "" 10 4 8 "deadline passed|circuit breaker"
  PF_FIGURES+=("tick with a black-holed Prometheus: $PF_TICK_MAX s, deadline $PF_DEADLINE s")
  if cond_is "$ns" fb ScalingActive "False FailedGetMetrics" || [[ "$PF_REASONS" == *" fb=Fallback "* ]]; then
    ok "black-holed: fb's fallback (CurrentIfHigher) held 4, not 1 (reasons seen:$PF_REASONS)"
  else fail "black-holed: fb never on its fallback (reasons seen:$PF_REASONS)"; fi

  # --- 3. connections reset: the breaker opens; time to recover
  pf_fault "reset" "$ns" reset "" 60 1 9 "circuit breaker|reset by peer"
  local opened
  opened=$(pf_count "${CTL_ERR[pf]}" "$PF_LINES" "prometheus circuit breaker open")
  if [[ "$opened" -ge 1 ]]; then ok "reset: the circuit breaker opened (\"prometheus circuit breaker open\" logged $opened times)"
  else fail "reset: no \"prometheus circuit breaker open\" line in pf's log"; fi
  local skipped
  skipped=$(( $(pf_counter "$WORK/pf-reset-1.prom" meshscaler_prometheus_queries_skipped_total) -
    $(pf_counter "$WORK/pf-reset-0.prom" meshscaler_prometheus_queries_skipped_total) ))
  if [[ "$PF_BREAKER_SEEN" == 1 && "$skipped" -ge 1 ]]; then
    ok "reset: /metrics shows it: meshscaler_prometheus_breaker_open 1, meshscaler_prometheus_queries_skipped_total +$skipped"
  else fail "reset: /metrics: breaker_open 1 seen: $PF_BREAKER_SEEN, queries_skipped_total +$skipped"; fi
  if pf_breaker_closed pf; then ok "reset, then pass: meshscaler_prometheus_breaker_open back to 0"
  else fail "reset, then pass: meshscaler_prometheus_breaker_open is '$(pf_breaker pf)' after recovery"; fi
  [[ -n "$PF_RECOVERY" ]] && PF_FIGURES+=("time to recover after the breaker opened (reset, then pass): $PF_RECOVERY s at a 2 s period")

  # --- 4. answered with an error, or too slowly
  pf_fault "status 429" "$ns" status "code=429&retry_after=5" 30 6 4 "429"
  pf_fault "status 503" "$ns" status "code=503&retry_after=5" 50 3 4 "503"
  pf_fault "trickle 20 B/s" "$ns" trickle "bytes_per_s=20" 20 5 6 "deadline passed|circuit breaker"

  # --- 2. SIGTERM with queries hanging. First the twin's, in pass mode: the baseline.
  local t0
  t0=$(now)
  ctl_stop pfd
  PF_EXIT_HEALTHY=$(elapsed "$t0")
  # Queries in flight: the first round after the black-hole has sent them
  # and nothing comes back (its connection is held open by the proxy; between
  # rounds none is). SIGTERM at once, long before the round's deadline.
  wait_for 5 pf_breaker_closed pf
  pf_mode blackhole
  wait_for 4 pf_has_open || note "(the proxy holds no connection: no query in flight?)"
  note "SIGTERM to pf with $(pf_open) connection(s) frozen in the proxy"
  t0=$(now)
  ctl_stop pf
  PF_EXIT_HUNG=$(elapsed "$t0")
  local cut
  cut="$(pf_shutdown_tick "${CTL_ERR[pf]}")"
  note "pf's log: $cut"
  PF_FIGURES+=("SIGTERM to exit with Prometheus hung: $PF_EXIT_HUNG s (with Prometheus answering: $PF_EXIT_HEALTHY s; $cut)")
  if fle "$PF_EXIT_HUNG" "$PF_EXIT_BOUND"; then ok "SIGTERM with Prometheus hung: exit in $PF_EXIT_HUNG s (< $PF_EXIT_BOUND s)"
  else fail "SIGTERM with Prometheus hung: $PF_EXIT_HUNG s to exit, bound $PF_EXIT_BOUND s (with Prometheus answering: $PF_EXIT_HEALTHY s; $cut)"; fi
  # The in-flight tick ends for the shutdown, not for its deadline.
  local tick_secs after
  read -r tick_secs after <<<"$(pf_shutdown_tick "${CTL_ERR[pf]}" numbers)"
  if [[ -n "$after" ]] && fle "$after" 1.5 && fle "$tick_secs" "$(python3 -c "print($PF_DEADLINE - 0.2)")"; then
    ok "SIGTERM cancels the hung tick: it ended $after s after \"shutting down\", $tick_secs s into its $PF_DEADLINE s deadline"
  else fail "SIGTERM and the hung tick: $cut"; fi
  # What the cancelled tick brought back is not an outage: no object is decided on
  # it (it was: MetricsUnavailable in status, and in a dry run's output).
  local late
  late="$(pf_decided_after_shutdown "${CTL_ERR[pf]}")"
  if [[ "$late" == 0 ]]; then ok "the tick cancelled by SIGTERM decided nothing (0 decisions after \"shutting down\")"
  else fail "the tick cancelled by SIGTERM decided: $late"; fi
  pf_mode pass
}

# pf_decided_after_shutdown ERRFILE : the decisions logged after "shutting down"
# ("0", or their count and first reasons).
pf_decided_after_shutdown() {
  python3 - "$1" <<'PY'
import json, sys
down, late = False, []
for line in open(sys.argv[1]):
    try:
        ev = json.loads(line)
    except ValueError:
        continue
    if ev.get("msg") == "shutting down":
        down = True
    elif down and ev.get("msg") in ("decided", "scaled"):
        late.append("%s %s" % (ev.get("object"), ev.get("reason")))
print(len(late) if not late else "%d (%s)" % (len(late), ", ".join(late[:3])))
PY
}

# pf_shutdown_tick ERRFILE [numbers] : from a debug log, the tick that ended
# after "shutting down": how long it ran, and when it ended after "shutting
# down"; and "shutting down" to "stopped". With "numbers": "TICK AFTER" only.
pf_shutdown_tick() {
  python3 - "$1" "${2:-}" <<'PY'
import json, sys
from datetime import datetime
def ts(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
down = stopped = tick = None
for line in open(sys.argv[1]):
    try:
        ev = json.loads(line)
    except ValueError:
        continue
    m = ev.get("msg")
    if m == "shutting down":
        down = ts(ev["ts"])
    elif m == "stopped":
        stopped = ts(ev["ts"])
    elif m == "round observed" and down is not None and tick is None:
        tick = (float(ev["seconds"]), ts(ev["ts"]) - down)
if sys.argv[2] == "numbers":
    print("%.2f %.2f" % tick if tick else "")
else:
    parts = []
    if tick:
        parts.append("the tick in flight ended %.2f s after \"shutting down\" (it ran %.2f s)" % (tick[1], tick[0]))
    else:
        parts.append("no tick in flight at shutdown")
    if down and stopped:
        parts.append("\"shutting down\" to \"stopped\" %.1f s" % (stopped - down))
    print("; ".join(parts))
PY
}

# --- 5. answers of 30 MiB --------------------------------------------------------------

# pf_big_query : one object's query, answered with 30 MiB by the real
# Prometheus at once and without stored data: one sample whose label "a"
# doubles 21 times from 15 bytes (label_join of a with itself), and whose
# label "o" names the object, so no two objects share a query. (A subquery
# matrix of as many bytes costs Prometheus seconds per answer, so few would
# arrive within a round.)
pf_big_query() {
  local q='label_replace(label_replace(vector(1),"o","{{name}}","",""),"a","0123456789abcde","","")' i
  for i in $(seq 1 21); do q="label_join($q,\"a\",\"\",\"a\",\"a\")"; done
  echo "$q"
}

# pf_rss PID : "HWM RSS" in MiB from /proc/PID/status.
pf_rss() {
  awk '/^VmHWM:/ {h = $2} /^VmRSS:/ {r = $2} END {printf "%d %d\n", h / 1024, r / 1024}' "/proc/$1/status" 2>/dev/null
}

# pf_big_run NAME FLAGS... : a dry-run controller over the big objects until
# a second round has ended (one object has two lines, every object one);
# PF_HWM and PF_RSS in MiB then. ASan's quarantine (256 MiB by default) keeps
# freed memory resident: cut to 8 MiB here so the figure is the
# controller's, not the sanitizer's.
pf_big_run() {
  local name="$1" pid
  shift
  ASAN_OPTIONS="${ASAN_OPTIONS:-}:quarantine_size_mb=8" pf_ctl_start "$name" "$RESTRICTED" \
    --namespace "$PF_BIG_NS" --dry-run --output json --sync-period 5s --prometheus-round-timeout 10s "$@" ||
    { fail "rss: controller $name never got ready"; return 1; }
  pid="${CTL_PID[$name]}"
  wait_for 45 pf_big_rounds "${CTL_OUT[$name]}" ||
    fail "rss: $name: not two rounds over every object within 45 s"
  read -r PF_HWM PF_RSS <<<"$(pf_rss "$pid")"
}

# pf_big_rounds OUT : every big object has a dry-run line, one has two.
pf_big_rounds() {
  python3 - "$1" "$PF_BIG_OBJECTS" <<'PY' 2>/dev/null
import collections, json, sys
n = collections.Counter()
for line in open(sys.argv[1]):
    try:
        n[json.loads(line).get("name")] += 1
    except ValueError:
        pass
sys.exit(0 if len(n) >= int(sys.argv[2]) and max(n.values()) >= 2 else 1)
PY
}

# pf_big_outcomes OUT : how each big object's last round ended, counted:
# "READ CAP BUDGET LATE SHARE OTHER" (LATE: cut by the round's deadline or
# the object's time share, as Prometheus takes seconds to build 30 MiB;
# SHARE: past the object's byte share; OTHER: the first other reason, or "-").
pf_big_outcomes() {
  python3 - "$1" <<'PY'
import json, sys
last = {}
for line in open(sys.argv[1]):
    try:
        ev = json.loads(line)
    except ValueError:
        continue
    last[ev.get("name")] = next(iter(ev.get("missing", {}).values()), "")
n = {"read": 0, "cap": 0, "budget": 0, "deadline": 0, "share": 0}
other = "-"
for name, why in sorted(last.items()):
    if why == "":
        n["read"] += 1
    elif "max-response-bytes" in why:
        n["cap"] += 1
    elif "max-round-bytes" in why or "had passed" in why:
        n["budget"] += 1
    elif "deadline passed" in why or "of the round's query time" in why:
        n["deadline"] += 1  # the round's deadline, or the object's time share
    elif "of the round's answers" in why:
        n["share"] += 1
    elif other == "-":
        other = f"{name}: {why[:160]}"
print(n["read"], n["cap"], n["budget"], n["deadline"], n["share"], other)
PY
}

pf_big() {
  new_ns pfbig || { fail "rss: namespace"; return; }
  local ns="$NS" q i size mib
  PF_BIG_NS=$ns
  q="$(pf_big_query)"
  size=$(curl -s -o /dev/null -w '%{size_download}' --max-time 30 "$PROMETHEUS_URL/api/v1/query" \
    --data-urlencode "query=${q//\{\{name\}\}/big0}")
  mib=$((size / 1048576))
  if [[ "$mib" -ge 30 ]]; then ok "rss: one object's answer from Prometheus is $size bytes ($mib MiB, uncompressed)"
  else fail "rss: the big query's answer is only $size bytes"; fi
  # In parallel, and waited for by PID (a bare wait would wait for the exporter).
  local pids=()
  for i in $(seq 0 $((PF_BIG_OBJECTS - 1))); do
    deployment "$ns" "big$i" 1 &
    pids+=($!)
  done
  wait "${pids[@]}"
  pids=()
  for i in $(seq 0 $((PF_BIG_OBJECTS - 1))); do
    pf_mas "$ns" "big$i" "$q" &
    pids+=($!)
  done
  wait "${pids[@]}"

  pf_big_run big1 || return
  local hwm1=$PF_HWM rss1=$PF_RSS nread ncap nbudget nlate nshare other
  note "default cap: VmHWM $hwm1 MiB, VmRSS $rss1 MiB; big0: \"$(pf_missing "${CTL_OUT[big1]}" big0 | cut -c1-200)\""
  read -r nread ncap nbudget nlate nshare other <<<"$(pf_big_outcomes "${CTL_OUT[big1]}")"
  if [[ $nread == 0 && $nbudget == 0 && $nshare == 0 && $ncap -ge 1 && "$other" == - ]] &&
    grep -q "exceeds its size limit of 1048576 bytes (raise --prometheus-max-response-bytes)" "${CTL_OUT[big1]}"; then
    ok "rss: at the default 1 MiB cap the answers are refused: $ncap TOO_LARGE naming the flag, $nlate cut by the deadline or their time share first"
  else fail "rss: at the default cap: $nread read, $ncap refused at the cap, $nbudget over the round budget, $nlate late, other: $other"; fi
  ctl_stop big1

  pf_big_run big2 --prometheus-max-response-bytes 64Mi --prometheus-max-round-bytes 64Mi || return
  local hwm2=$PF_HWM rss2=$PF_RSS
  read -r nread ncap nbudget nlate nshare other <<<"$(pf_big_outcomes "${CTL_OUT[big2]}")"
  note "cap 64Mi: VmHWM $hwm2 MiB, VmRSS $rss2 MiB; last round: $nread answers read, $nshare past their share, $nbudget refused by the round budget, $nlate by the deadline; big0: \"$(pf_missing "${CTL_OUT[big2]}" big0 | cut -c1-220)\""
  # The fair shares (docs/controller.md): 64Mi for one namespace of 16
  # objects is 4 MiB each, so no 30 MiB answer fits its object's share. An
  # object that meets a round alone (a catch-up round: an early sync joins
  # one, docs/controller.md) has the namespace's share to itself and may
  # read its answer; the others stop at their share.
  if [[ $nread -le 1 && $ncap == 0 && $nbudget == 0 && $nshare -ge $((PF_BIG_OBJECTS - 2)) && "$other" == - ]] &&
    grep -q "share 4194304 bytes of the round's answers" "${CTL_OUT[big2]}"; then
    ok "rss: with the cap raised each answer stops at its object's share of the round's 64Mi (4 MiB of 16 objects): $nshare OVER_SHARE, $nlate cut by the deadline or their time share first"
  else fail "rss: with the cap raised: $nread read, $ncap refused at the cap, $nshare past the share, $nbudget over budget, $nlate late, other: $other"; fi
  ctl_stop big2
  PF_FIGURES+=("RSS with $PF_BIG_OBJECTS x 30 MiB answers: default cap $hwm1 MiB, cap raised to 64Mi $hwm2 MiB (round budget --prometheus-max-round-bytes 64Mi; VmHWM of the Sanitize build, ASan quarantine 8 MiB)")
  if [[ -n "$hwm1" && -n "$hwm2" && "$hwm1" -lt "$PF_RSS_BOUND" && "$hwm2" -lt "$PF_RSS_BOUND" ]]; then
    ok "rss: peak RSS under $PF_RSS_BOUND MiB ($hwm1 MiB at the default cap, $hwm2 MiB at 64Mi)"
  else fail "rss: peak RSS $hwm1 MiB (default cap), $hwm2 MiB (64Mi cap, 64Mi round budget): over $PF_RSS_BOUND MiB"; fi
}

# --- 6. --user-queries -------------------------------------------------------------------

pf_policies() {
  new_ns pfq || { fail "user-queries: namespace"; return; }
  local ns="$NS" pod="pre-5d8f9c7b6d-x2k4q" msg
  deployment "$ns" nsok 1
  deployment "$ns" nsbad 2
  deployment "$ns" pre 1
  series_set test_load "$ns" nsok 30
  series_set test_load "$ns" nsbad 90
  publish
  pf_sessions "$ns" "$pod" 30 || { fail "user-queries: series not in Prometheus"; return; }
  pf_mas "$ns" nsok "$PF_LOAD_QUERY"
  pf_mas "$ns" nsbad 'sum(test_load)'
  pf_preset "$ns" pre

  pf_ctl_start nsq "$RESTRICTED" --namespace "$ns" --sync-period 1s --user-queries=namespaced ||
    { fail "user-queries: the namespaced controller never got ready"; return; }
  if wait_for 20 is_replicas "$ns" nsok 3; then ok "namespaced: a query with namespace=\"{{namespace}}\" works (nsok 1 -> 3)"
  else fail "namespaced: nsok $(replicas "$ns" nsok), reason $(mas_reason "$ns" nsok), $(mas_cond "$ns" nsok ScalingActive)"; fi
  if wait_for 10 is_replicas "$ns" pre 3; then ok "namespaced: the preset-based object works (pre 1 -> 3 on HAProxy sessions)"
  else fail "namespaced: pre $(replicas "$ns" pre), $(mas_cond "$ns" pre ScalingActive): $(pf_cond_msg "$ns" pre ScalingActive)"; fi
  msg="$(pf_cond_msg "$ns" nsbad ScalingActive)"
  if cond_is "$ns" nsbad ScalingActive "False InvalidSpec" && [[ "$msg" == *'selector test_load at offset 4 has no namespace="{{namespace}}" matcher'* &&
    "$msg" == *"--user-queries=namespaced"* && "$msg" == *"spec.metrics[0].prometheus.query"* ]]; then
    ok "namespaced: sum(test_load) refused, InvalidSpec: \"$msg\""
  else fail "namespaced: nsbad's ScalingActive $(mas_cond "$ns" nsbad ScalingActive): \"$msg\""; fi
  if hold 3 "$ns" nsbad 2; then ok "namespaced: the refused object does not scale (nsbad stays 2 although the total asks more)"
  else fail "namespaced: nsbad moved: $HOLD_SEEN"; fi
  # What the namespace's user queries cost, per namespace (the round's 10
  # costliest namespaces; here nsok's query is the only one).
  msg="$(ctl_metrics nsq | grep -E "^meshscaler_prometheus_namespace_(query_seconds|answer_bytes|over_share)\{" | tr '\n' ' ')"
  if [[ "$msg" == *"meshscaler_prometheus_namespace_query_seconds{namespace=\"$ns\"} "* &&
    "$msg" =~ meshscaler_prometheus_namespace_answer_bytes\{namespace=\"$ns\"\}\ [1-9] &&
    "$msg" == *"meshscaler_prometheus_namespace_over_share{namespace=\"$ns\"} 0"* ]]; then
    ok "namespaced: /metrics shows the namespace's cost: $msg"
  else fail "namespaced: per-namespace cost series: \"$msg\""; fi
  ctl_stop nsq

  series_set test_load "$ns" nsok 50
  publish
  pf_sessions "$ns" "$pod" 50 || fail "user-queries: sessions 50 not in Prometheus"
  pf_ctl_start deny "$RESTRICTED" --namespace "$ns" --sync-period 1s --user-queries=deny ||
    { fail "user-queries: the deny controller never got ready"; return; }
  if wait_for 15 is_replicas "$ns" pre 5; then ok "deny: the preset-based object still works (pre 3 -> 5)"
  else fail "deny: pre $(replicas "$ns" pre), $(mas_cond "$ns" pre ScalingActive): $(pf_cond_msg "$ns" pre ScalingActive)"; fi
  msg="$(pf_cond_msg "$ns" nsok ScalingActive)"
  if wait_for 5 cond_is "$ns" nsok ScalingActive "False InvalidSpec" &&
    [[ "$(pf_cond_msg "$ns" nsok ScalingActive)" == *"not allowed by --user-queries=deny"* ]]; then
    ok "deny: the user query is refused: \"$(pf_cond_msg "$ns" nsok ScalingActive)\""
  else fail "deny: nsok's ScalingActive $(mas_cond "$ns" nsok ScalingActive): \"$(pf_cond_msg "$ns" nsok ScalingActive)\""; fi
  if hold 2 "$ns" nsok 3; then ok "deny: nsok does not scale (stays 3 although its load asks 5)"
  else fail "deny: nsok moved: $HOLD_SEEN"; fi
  ctl_stop deny
}

test_promfaults() {
  local t=$SECONDS
  pf_proxy_start || { fail "promfaults: the fault proxy did not start ($(head -c 200 "$WORK/pf-proxy.err"))"; return; }
  pf_faults
  ctl_stop_all
  stop_pid "$PF_PROXY_PID"
  note "faults took $((SECONDS - t)) s"
  t=$SECONDS
  pf_big
  ctl_stop_all
  note "30 MiB answers took $((SECONDS - t)) s"
  t=$SECONDS
  pf_policies
  note "--user-queries took $((SECONDS - t)) s"
  local f
  for f in "${PF_FIGURES[@]}"; do echo "$f"; done
}
